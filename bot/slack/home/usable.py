"""What one person may use of the policy, and where: the services, commands and runbooks their
Home tab lists and their Messages tab suggests. The rule is the policy's own (`Access.allows`);
this only asks it for a person who is not in any channel yet.

A thing open to some channels only is usable there: it is listed with those channels, since
the person can use it by asking in one of them. A runbook has no access of its own: it is
listed unless one of its steps names a service or a command the person may not use anywhere
(a step that takes the name from a parameter is checked when the runbook runs).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ....config.policy import Access, Policy, Principal, Runbook, ToolStep

# The tools whose steps name a service, and those that name a command, by the argument.
_SERVICE_ARG = "service"
_COMMAND_TOOL, _COMMAND_ARG = "run_command", "command"


class Usable(BaseModel):
    """A thing a person may use: its name, what it is, and the channels it is limited to (empty:
    wherever they ask)."""

    model_config = ConfigDict(frozen=True)

    name: str
    about: str
    only_in: tuple[str, ...] = ()
    write: bool = False


def reach(access: Access, person: Principal) -> tuple[str, ...] | None:
    """Where `person` may use what `access` guards: () anywhere they ask, the channels it is
    limited to, or None when nowhere."""
    if access.allows(person):
        return ()
    there = tuple(sorted(c for c in access.channels if access.allows(person.model_copy(update={"channel": c}))))
    return there or None


def services(policy: Policy, person: Principal) -> list[Usable]:
    return [
        Usable(name=name, about=service.description, only_in=where)
        for name, service in sorted(policy.services.items())
        if (where := reach(service.access, person)) is not None
    ]


def commands(policy: Policy, person: Principal) -> list[Usable]:
    return [
        Usable(name=name, about=command.description, only_in=where, write=command.risk == "write")
        for name, command in sorted(policy.commands.items())
        if (where := reach(command.access, person)) is not None
    ]


def runbooks(policy: Policy, person: Principal) -> list[Usable]:
    shown = {s.name for s in services(policy, person)}, {c.name for c in commands(policy, person)}
    return [
        Usable(name=runbook.id, about=runbook.description)
        for _, runbook in sorted(policy.runbooks.items())
        if _uses_only(runbook, *shown)
    ]


def _uses_only(runbook: Runbook, services: set[str], commands: set[str]) -> bool:
    for step in runbook.steps:
        if not isinstance(step, ToolStep):
            continue
        service = _literal(step.args.get(_SERVICE_ARG))
        if service is not None and service not in services:
            return False
        command = _literal(step.args.get(_COMMAND_ARG)) if step.tool == _COMMAND_TOOL else None
        if command is not None and command not in commands:
            return False
    return True


def _literal(value: object) -> str | None:
    """A name written in the step itself; None for a template (`{params.service}`) or nothing."""
    return value if isinstance(value, str) and "{" not in value else None
