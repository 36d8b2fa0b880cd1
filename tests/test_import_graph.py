"""The import graph of bot/, tools/ and config/: arrows point down (bot -> tools -> config), no
module reaches itself through imports, no module imports its own package's __init__, and from
outside a package with a face (an `__all__`) imports go through that face.

Every import counts, in functions and under TYPE_CHECKING too: a circle hidden in a function is
still a circle, only one that breaks at run time instead of at import time."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lower layers never import higher ones.
LAYERS = {"config": 0, "tools": 1, "bot": 2}

Graph = dict[str, set[str]]


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py of the layers under `root` (a package is its __init__)."""
    found: dict[str, Path] = {}
    for top in LAYERS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours `name` is or lies in (`tools.logs.query.query_logs` -> `tools.logs.query`)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _ancestors(name: str) -> Iterator[str]:
    while "." in name:
        name = name.rpartition(".")[0]
        yield name


def imports_of(name: str, known: dict[str, Path]) -> set[str]:
    """The modules of ours that `name` names in an import statement, wherever the statement is."""
    path = known[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*kept, *([base] if base else [])])
            # `from tools.logs import files` imports the submodule; `from tools.logs import LEVELS`
            # imports the package.
            targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    owners = {_owner(target, known) for target in targets}
    return {owner for owner in owners if owner is not None and owner != name}


def graph(root: Path) -> tuple[Graph, Graph]:
    """(what each module names in its imports, what importing it runs).

    Importing `tools.logs.files` runs `tools/logs/__init__.py` first, so an import reaches every
    package above its target too, except the importer's own packages: those are already being
    imported when its code runs."""
    known = modules(root)
    named = {name: imports_of(name, known) for name in known}
    runs: Graph = {}
    for name, targets in named.items():
        own = {name, *_ancestors(name)}
        runs[name] = targets | {p for t in targets for p in _ancestors(t) if p not in own and p in known}
    return named, runs


def upward(named: Graph) -> list[str]:
    return sorted(
        f"{a} -> {b}"
        for a, targets in named.items()
        for b in targets
        if LAYERS[b.split(".")[0]] > LAYERS[a.split(".")[0]]
    )


def own_package_imports(named: Graph) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in named.items() for b in targets if a.startswith(b + "."))


def circles(runs: Graph) -> list[list[str]]:
    """One circle per strongly connected group of modules, each as a path that ends where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    # Iterative Tarjan: the graph is deep enough that recursion would need a raised limit.
    for start in sorted(runs):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(runs[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            child = next(pending, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(runs[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return [_path_around(group, runs) for group in groups]


def _path_around(group: set[str], runs: Graph) -> list[str]:
    """A shortest way from the group's first module back to itself, through the group."""
    first = min(group)
    came_from: dict[str, str] = {}
    frontier = [first]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(runs[node] & group):
                if child == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(came_from[path[-1]])
                    return [first, *reversed(path[:-1]), first]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no way around {sorted(group)}")


# ---------------------------------------------------------------- the house


def test_arrows_point_down() -> None:
    named, _ = graph(ROOT)
    found = upward(named)
    assert not found, "config/ imports nothing of ours, tools/ imports config/ only:\n" + "\n".join(found)


def test_no_import_circles() -> None:
    _, runs = graph(ROOT)
    found = [" -> ".join(circle) for circle in circles(runs)]
    assert not found, "move what both sides need to a module they can both import:\n" + "\n".join(found)


def test_no_module_imports_its_own_package() -> None:
    named, _ = graph(ROOT)
    found = own_package_imports(named)
    assert not found, "import the sibling module; a package's __init__ is for outside:\n" + "\n".join(found)


# ---------------------------------------------------------------- the checks themselves


# Modules imported by name from outside their package on purpose (ARCHITECTURE.md): the loop's
# words, which front ends use piecemeal, and what is imported only when Redis or a chat is used.
BY_NAME = {
    "bot.agent.prompts",
    "bot.agent.answer_stream",
    "bot.memory.redis",
    "bot.incidents.redis",
    "bot.terminal.session",
}


def faces(root: Path) -> set[str]:
    """The packages whose __init__.py is a face: it says what it exposes (`__all__`)."""
    return {
        name
        for name, path in modules(root).items()
        if path.name == "__init__.py" and "__all__" in path.read_text(encoding="utf-8")
    }


def past_faces(named: Graph, root: Path) -> list[str]:
    """Imports from outside a package with a face that name one of its modules instead."""
    with_faces = faces(root)
    return sorted(
        f"{a} -> {b}"
        for a, targets in named.items()
        for b in targets
        if b not in BY_NAME
        for package in _ancestors(b)
        if package in with_faces and not a.startswith(package + ".") and a != package
    )


def test_outside_a_package_imports_go_through_its_face() -> None:
    named, _ = graph(ROOT)
    assert past_faces(named, ROOT) == []


def test_an_import_past_a_face_is_named(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "tools/__init__.py": "",
            "tools/pkg/__init__.py": "from tools.pkg.inner import thing\n__all__ = ['thing']\n",
            "tools/pkg/inner.py": "thing = 1\n",
            "tools/user.py": "from tools.pkg.inner import thing\n",
            "tools/polite.py": "from tools.pkg import thing\n",
            "config/__init__.py": "",
            "bot/__init__.py": "",
        },
    )
    named, _ = graph(tmp_path)
    assert past_faces(named, tmp_path) == ["tools.user -> tools.pkg.inner"]


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_deferred_and_type_checking_imports_make_circles_and_upward_arrows(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "config/__init__.py": "",
            "config/a.py": "def f() -> None:\n    from config import b\n",
            "config/b.py": "from config.a import f\n",
            "tools/__init__.py": "",
            "tools/t.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.x import X\n",
            "bot/__init__.py": "",
            "bot/x.py": "from . import y\n",
            "bot/y.py": "",
        },
    )
    named, runs = graph(tmp_path)
    assert named["config.a"] == {"config.b"}, "`from config import b` is the submodule b"
    assert named["bot.x"] == {"bot.y"}, "relative imports are resolved"
    assert upward(named) == ["tools.t -> bot.x"]
    assert circles(runs) == [["config.a", "config.b", "config.a"]]


def test_an_import_through_a_package_runs_its_init(tmp_path: Path) -> None:
    # tools.b imports tools.pkg.c, which runs tools/pkg/__init__.py, which imports tools.b.
    _tree(
        tmp_path,
        {
            "config/__init__.py": "",
            "bot/__init__.py": "",
            "tools/__init__.py": "",
            "tools/b.py": "import tools.pkg.c\n",
            "tools/pkg/__init__.py": "from tools.pkg.d import D\n",
            "tools/pkg/c.py": "",
            "tools/pkg/d.py": "def g() -> None:\n    from tools import b\n",
        },
    )
    named, runs = graph(tmp_path)
    assert named["tools.b"] == {"tools.pkg.c"}
    assert circles(runs) == [["tools.b", "tools.pkg", "tools.pkg.d", "tools.b"]]
    assert own_package_imports(named) == []


def test_a_module_importing_its_own_package_is_named(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "config/__init__.py": "",
            "bot/__init__.py": "",
            "tools/__init__.py": "",
            "tools/pkg/__init__.py": "",
            "tools/pkg/c.py": "from tools.pkg import NAME\n",
        },
    )
    named, _ = graph(tmp_path)
    assert own_package_imports(named) == ["tools.pkg.c -> tools.pkg"]
