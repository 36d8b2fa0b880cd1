"""Shapes a reader relies on in bot/, tools/ and config/: a function that gives back several values
names them (a NamedTuple or a dataclass, not a bare `tuple[int, int]` whose order the caller must
remember), and a constructor with five or more parameters takes all but its first two (the
collaborators it is about, as `Agent(model, memory, ...)`) by keyword, so a call site says which
value is which."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.test_import_graph import ROOT, modules

# From this many parameters on (self aside), positional calls are where arguments get swapped.
MANY = 5
LEADING = 2


def _definitions(root: Path) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{name}.{node.name}:{node.lineno}", node


def _bare_tuples(annotation: ast.expr | None) -> Iterator[ast.Subscript]:
    """`tuple[A, B]` anywhere at the top of a return annotation (`tuple[A, B] | None` too);
    `tuple[A, ...]` is a sequence, not several values, and is allowed."""
    if annotation is None:
        return
    if isinstance(annotation, ast.BinOp):
        yield from _bare_tuples(annotation.left)
        yield from _bare_tuples(annotation.right)
    elif isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        if annotation.value.id != "tuple" or not isinstance(annotation.slice, ast.Tuple):
            return
        items = annotation.slice.elts
        if len(items) > 1 and not any(isinstance(i, ast.Constant) and i.value is Ellipsis for i in items):
            yield annotation


def bare_tuple_returns(root: Path) -> list[str]:
    return [where for where, node in _definitions(root) if any(_bare_tuples(node.returns))]


def positional_constructors(root: Path) -> list[str]:
    found = []
    for where, node in _definitions(root):
        if node.name != "__init__":
            continue
        positional = [*node.args.posonlyargs, *node.args.args][1:]
        if len(positional) + len(node.args.kwonlyargs) >= MANY and len(positional) > LEADING:
            found.append(where)
    return found


def test_functions_name_the_values_they_return() -> None:
    assert bare_tuple_returns(ROOT) == []


def test_constructors_with_many_parameters_take_keywords() -> None:
    assert positional_constructors(ROOT) == []


def _house(tmp_path: Path, source: str) -> Path:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "__init__.py").write_text("")
    (tmp_path / "bot" / "shapes.py").write_text(source)
    return tmp_path


def test_a_bare_tuple_return_is_named(tmp_path: Path) -> None:
    root = _house(
        tmp_path,
        "def span(t: str) -> tuple[int, int] | None: ...\n"
        "def parts(t: str) -> tuple[str, ...]: ...\n"
        "def pair() -> 'Pair': ...\n",
    )
    assert bare_tuple_returns(root) == ["bot.shapes.span:1"]


def test_a_positional_constructor_is_named(tmp_path: Path) -> None:
    root = _house(
        tmp_path,
        "class A:\n"
        "    def __init__(self, a: int, b: int, c: int, d: int, e: int) -> None: ...\n"
        "class B:\n"
        "    def __init__(self, a: int, b: int, *, c: int, d: int, e: int) -> None: ...\n"
        "class C:\n"
        "    def __init__(self, *, a: int, b: int, c: int, d: int, e: int) -> None: ...\n"
        "class D:\n"
        "    def __init__(self, a: int, b: int, c: int, d: int) -> None: ...\n"
        "class E:\n"
        "    def __init__(self, a: int, b: int, c: int, *, d: int, e: int) -> None: ...\n",
    )
    assert positional_constructors(root) == ["bot.shapes.__init__:2", "bot.shapes.__init__:10"]
