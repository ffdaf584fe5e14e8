"""PTX emission time (not a test; prints figures).

    python scripts/bench_emit.py [--statements 100] [--repeats 20]

Builds a program of N statements (lets, assignments, stores, ifs and loops over a mix of ops),
validates it once, then times `emit` alone (validated=True) and `emit` with validation, median
of the repeats. The issue's target: under 20 ms for 100 statements.
"""

from __future__ import annotations

import argparse
import statistics
import time

from vyre_decl.emit import emit
from vyre_decl.ir import parse_program, validate
from vyre_decl.ir.walk import statements
from vyre_decl.registry import default_registry


def program_text(n: int) -> str:
    lines = ["program bench workgroup(128, 1, 1) {", "  buffer a: read u32[] @0", "  buffer f: read f32[] @1",
             "  buffer o: write u32[len(a)] @2", "  buffer g: write f32[len(a)] @3", "  let i = gid.x",
             "  let acc = a[i]", "  let x = f[i]"]
    k = 0
    while len(lines) - 5 < n:
        k += 1
        lines += [
            f"  let t{k} = (acc ^ {k}u32) * 2654435761u32 + (acc >> {k % 31}u32)",
            f"  if t{k} % 3u32 == 0u32 {{ acc = acc + primitive.bitwise.popcount(t{k}) }} else {{ acc = acc - 1u32 }}",
            f"  loop j{k} in 0u32 .. 4u32 {{ x = x * 0.5f32 + (j{k} as f32) }}",
            f"  o[i + {k}u32] = acc",
            f"  g[i] = primitive.math.max(x, t{k} as f32)",
        ]
    return "\n".join(lines) + "\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--statements", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    reg = default_registry()
    program = parse_program(program_text(args.statements))
    count = sum(1 for _ in statements(program.body))
    assert validate(program, reg) == []
    emit(program, reg, validated=True)  # warm up
    def median(fn):
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1e3
    only = median(lambda: emit(program, reg, validated=True))
    full = median(lambda: emit(program, reg))
    lines = emit(program, reg, validated=True).text.count("\n")
    print(f"program: {count} statements (nested included), {lines} PTX lines")
    print(f"emit (already validated): {only:7.2f} ms")
    print(f"validate + emit         : {full:7.2f} ms")


if __name__ == "__main__":
    main()
