"""The README's example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs():
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    printed = out.getvalue()
    assert "[1. 3. 5. 7.]" in printed
    text_form = re.search(r"```\n(program saxpy.*?)```", text, re.S).group(1)
    assert text_form in printed  # the text form shown is exactly what print(program) gives


def test_readme_commands_match_ci():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pip install -e '.[test]' && python -m pytest -q" in text
    assert "pip install -q -e '.[test]'" in ci and "python -m pytest -q" in ci
