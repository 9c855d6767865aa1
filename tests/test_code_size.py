"""The size rules of the developer guide: modules under 400 lines, functions of at most 40.

A function's length runs from its first decorator (a typer command's ``@app.command()`` is part of it) to its
last line, as ``ast`` reports them, so a signature with a long option list counts in full. Nested functions and
methods are functions too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("engine", "streams", "ops")
MAX_MODULE_LINES = 399
MAX_FUNCTION_LINES = 40

# Functions that are still too long; each entry must go once its function is split (the test says so).
ALLOWED_LONG = {
    "streams/runtime/transport.py:transport_class",  # to be split; tracked (bounded restores, restore22)
    "streams/services/gate.py:process_draft",  # to be split; tracked (bounded restores, restore22)
}


def source_files() -> list[Path]:
    return [path for root in ROOTS for path in sorted((REPO / root).rglob("*.py"))]


def function_lengths(source: str) -> Iterator[tuple[str, int]]:
    """(qualified name, lines from the first decorator to the end) of every function in ``source``."""

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    yield name, (child.end_lineno or child.lineno) - first + 1
                yield from visit(child, f"{name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(ast.parse(source), "")


def long_functions() -> dict[str, int]:
    found = {}
    for path in source_files():
        for name, length in function_lengths(path.read_text(encoding="utf-8")):
            if length > MAX_FUNCTION_LINES:
                found[f"{path.relative_to(REPO).as_posix()}:{name}"] = length
    return found


def test_a_function_is_measured_from_its_first_decorator_to_its_end() -> None:
    source = "@app.command()\n@other\ndef f(\n    a: int,\n) -> None:\n    def g() -> None:\n        pass\n"
    source += "class C:\n    @property\n    def h(self) -> int:\n        return 1\n"
    assert dict(function_lengths(source)) == {"f": 7, "f.g": 2, "C.h": 3}


def test_no_function_is_longer_than_40_lines() -> None:
    found = long_functions()
    too_long = {name: length for name, length in found.items() if name not in ALLOWED_LONG}
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {too_long}"


def test_the_allowed_long_functions_are_still_long() -> None:
    fixed = ALLOWED_LONG - set(long_functions())
    assert not fixed, (
        f"these functions are {MAX_FUNCTION_LINES} lines or fewer now: remove them from ALLOWED_LONG {fixed}"
    )


def test_no_module_is_400_lines_or_longer() -> None:
    counts = {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines()) for path in source_files()
    }
    too_long = {name: count for name, count in counts.items() if count > MAX_MODULE_LINES}
    assert not too_long, f"modules of 400 lines or more (split them by concern): {too_long}"
