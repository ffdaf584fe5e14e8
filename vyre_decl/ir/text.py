"""The text form of programs (``.vyre`` files): ``parse(print(p)) == p``.

```
program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = a[i] + b[i]
  }
}
```

Literals always carry their type (``5u32``, ``-1i32``, ``1.5f32``, ``nan_f32``,
``bits(0x7fc00001)_f32``, ``true``). Operators are sugar for op ids (see ``sugar.py``); any op
is written by id, with type arguments and attributes in angle brackets:
``primitive.convert.cast<T=f32>(x)`` (also ``x as f32``). Atomics: ``atomic OP(buf[i], v)``.
``#`` starts a comment. Statements are separated by newlines or ``;``.

This module is the front door; the work is done in ``lexer``, ``printer`` and ``parser``.
"""

from __future__ import annotations

from .lexer import KEYWORDS, ParseError
from .compose import parse_compose
from .parser import parse_expr, parse_program
from .printer import print_expr, print_program

__all__ = ["print_program", "print_expr", "parse_program", "parse_expr", "parse_compose", "ParseError", "KEYWORDS"]
