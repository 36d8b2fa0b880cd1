"""opsbot's version, as the installed distribution says it (pyproject.toml's `version`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("opsbot")
except PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "unknown (not installed)"
