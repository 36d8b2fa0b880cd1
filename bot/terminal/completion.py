"""Tab completion at the chat prompt: the direct commands' words, then the names the policy
declares where each command takes one (prompt_toolkit's NestedCompleter walks the words)."""

from __future__ import annotations

from prompt_toolkit.completion import NestedCompleter

from ...config.policy import Policy
from ...tools.logs import LEVELS
from ..commands import NAMES

LEAVE = ("exit", "quit")


def completer(policy: Policy) -> NestedCompleter:
    levels = dict.fromkeys(LEVELS)
    runbooks = dict.fromkeys(sorted(policy.runbooks))
    words: dict[str, object] = dict.fromkeys((*NAMES, *LEAVE))
    words |= {
        "logs": {name: levels for name in sorted(policy.services)},
        "run": dict.fromkeys(sorted(policy.commands)),
        "config": dict.fromkeys(sorted(policy.config_files)),
        "runbook": {"list": None, "show": runbooks, "run": runbooks},
        "metrics": {name: {"find": None} for name in sorted(policy.metrics)},
        "alerts": dict.fromkeys(sorted(policy.alertmanagers)),
        "mcp": {name: dict.fromkeys(sorted(spec.tools)) for name, spec in sorted(policy.mcp.items())},
    }
    return NestedCompleter.from_nested_dict(words)
