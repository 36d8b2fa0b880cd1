"""Yelp's detect-secrets as a second opinion: its vendor plugins, and what they find in a text.

Used by tests/test_detect_secrets_crosscheck.py and tests/bench/bench_redaction.py.
"""

from __future__ import annotations

import inspect
import pkgutil
import re
from importlib import import_module

from detect_secrets import plugins
from detect_secrets.plugins.base import RegexBasedDetector

# Plugins whose patterns match by design on things that are no secrets once redacted, or none at
# all: a public IP address, and a private key's BEGIN line, which opsbot keeps when no key
# follows it (someone writing about keys).
NOT_VENDORS = frozenset({"IPPublicDetector", "PrivateKeyDetector"})


def vendor_plugins() -> list[type[RegexBasedDetector]]:
    """detect-secrets' pattern plugins, by name, without the two above."""
    found: dict[str, type[RegexBasedDetector]] = {}
    for module in pkgutil.iter_modules(plugins.__path__):
        loaded = import_module(f"{plugins.__name__}.{module.name}")
        for name, value in inspect.getmembers(loaded, inspect.isclass):
            # Abstract bases have a property where a plugin has its list of patterns.
            if issubclass(value, RegexBasedDetector) and isinstance(value.denylist, list | tuple):
                if name not in NOT_VENDORS:
                    found[name] = value
    return [found[name] for name in sorted(found)]


PLUGINS = vendor_plugins()


def findings(text: str) -> list[tuple[str, str]]:
    """(plugin, what it matched) for every match of every vendor plugin in `text`."""
    out = []
    for plugin in PLUGINS:
        for pattern in plugin.denylist:
            out += [(plugin.__name__, match.group(0)) for match in re.finditer(pattern, text)]
    return out
