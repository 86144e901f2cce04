"""The size budget ruff cannot check: files <= 700 lines, functions <= 100 lines of code.

Complexity (C901 <= 12), branches (PLR0912 <= 15) and statements (PLR0915 <= 60) are
checked by ruff in `make lint` (pyproject.toml); docs/decisions/ gives the reasons.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "recaudit"
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 100


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_source_file_is_over_700_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert long == {}


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the signature to the end, the docstring (numpydoc, formulas) left out."""
    first = node.body[0]
    doc = (first.end_lineno - first.lineno + 1
           if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
           and isinstance(first.value.value, str) else 0)
    return node.end_lineno - node.lineno + 1 - doc


def test_no_function_is_over_100_lines() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node)
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = n
    assert long == {}


def test_no_text_file_holds_control_characters() -> None:
    """A ``\\f`` or ``\\b`` written into a docstring by an unescaped ``\\frac`` / ``\\bar``
    (a non-raw string) renders as garbage in the API docs."""
    root = SRC.parents[1]
    files = [*_sources(), *root.glob("tests/**/*.py"), *root.glob("benchmarks/*.py"),
             *root.glob("docs/**/*.md"), root / "README.md"]
    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
    found = [str(p.relative_to(root)) for p in files
             if bad.search(p.read_text(encoding="utf-8"))]
    assert found == []
