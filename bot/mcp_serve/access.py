"""Which of opsbot's tools a caller is shown: those it may use on at least one thing. Each tool
still checks access itself on every call (the service, command, config root, source or MCP tool
asked for), so a tool shown is not a tool that lets the caller past the policy, and a tool not
shown is refused when called by name all the same."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...config.policy import Access, Policy, Principal, offered_name


def usable(policy: Policy, tool: str, caller: Principal) -> bool:
    """Whether `caller` may use `tool` on anything the policy declares."""
    for server, spec in policy.mcp.items():
        for name, allowed in spec.tools.items():
            if offered_name(server, name) == tool:
                return allowed.access.allows(caller)
    guard = _GUARDS.get(tool)
    return guard is None or _any(guard(policy), caller)


def _any(accesses: Iterable[Access], caller: Principal) -> bool:
    return any(access.allows(caller) for access in accesses)


# A tool over things each with its own `access`; the others (list_services, the runbooks' tools)
# show only what the policy declares, to anyone.
_GUARDS: dict[str, Callable[[Policy], Iterable[Access]]] = {
    "query_logs": lambda p: (s.access for s in p.services.values()),
    "run_command": lambda p: (c.access for c in p.commands.values()),
    "read_config": lambda p: (c.access for c in p.config_files.values()),
    "query_metrics": lambda p: (m.access for m in p.metrics.values()),
    "find_metrics": lambda p: (m.access for m in p.metrics.values()),
    "query_alerts": lambda p: (a.access for a in p.alertmanagers.values()),
    "create_silence": lambda p: (a.access for a in p.alertmanagers.values()),
}
