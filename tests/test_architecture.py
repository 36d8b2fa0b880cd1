"""ARCHITECTURE.md stays true: every path, module file and dotted module name it gives exists, and
every package of the house (bot/, tools/, config/ and each package below them) is named in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOUSE = ("bot", "tools", "config")
TEXT = (ROOT / "ARCHITECTURE.md").read_text()

# `bot/slack/app.py`, `tools/logs/`, `config/sample/`: a path from the repository's top.
PATH = re.compile(r"(?<![\w./-])((?:bot|tools|config)(?:/[\w.-]+)*/?)(?![\w-])")
# `session.py` in a package's section: a module file named without its package.
FILE = re.compile(r"(?<![\w/.-])([a-z_][\w]*\.py)\b")
# `bot.terminal.session`, `config.policy`: a module by its dotted name (an attribute may follow).
DOTTED = re.compile(r"(?<![\w./-])((?:bot|tools|config)(?:\.[a-z_]\w*)+)")


def packages() -> set[str]:
    return {str(init.parent.relative_to(ROOT)) for top in HOUSE for init in (ROOT / top).rglob("__init__.py")}


def module_files() -> set[str]:
    return {path.name for top in HOUSE for path in (ROOT / top).rglob("*.py")}


def is_module(dotted: str) -> bool:
    path = ROOT / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_path_it_names_exists() -> None:
    missing = sorted({path for path in PATH.findall(TEXT) if not (ROOT / path.rstrip(".")).exists()})
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_module_file_it_names_exists_in_the_house() -> None:
    known = module_files()
    missing = sorted({name for name in FILE.findall(TEXT) if name not in known})
    assert not missing, f"ARCHITECTURE.md names module files that do not exist: {missing}"


def test_every_dotted_module_it_names_exists() -> None:
    missing = sorted(
        {name for name in DOTTED.findall(TEXT) if not (is_module(name) or is_module(name.rpartition(".")[0]))}
    )
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"


def test_every_package_of_the_house_is_named() -> None:
    # A package is named by its path or by the path of a module in it (bot/slack/listeners/events.py).
    named = {str(parent) for path in PATH.findall(TEXT) for parent in [Path(path), *Path(path).parents]}
    unnamed = sorted(packages() - named)
    assert not unnamed, f"packages ARCHITECTURE.md does not name (as bot/x/): {unnamed}"
