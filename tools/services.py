"""list_services: what this opsbot can look at, so the model never has to guess a name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..config.policy import Policy, Principal
from .base import Tool, ToolResult
from .text import plural


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _entries(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "about": about} for name, about in sorted(pairs)]


def list_services_tool(policy: Policy) -> Tool[NoArgs]:
    def run(_: NoArgs, principal: Principal | None) -> ToolResult:
        # Names are values, never keys: a service called `auth` or `secrets` must not look like
        # a secret's key to redaction, which would hide its description.
        return ToolResult.success(
            {
                "services": _entries((name, s.description) for name, s in policy.services.items()),
                "commands": _entries((name, c.summary()) for name, c in policy.commands.items()),
                "config_files": _entries((name, c.description) for name, c in policy.config_files.items()),
            }
        )

    return Tool(
        name="list_services",
        description="The services (with logs), diagnostic commands and config files you may use, by name.",
        args_model=NoArgs,
        run=run,
        summarize=_brief,
        show=_show,
    )


def _brief(data: dict[str, list[Any]]) -> str:
    return (
        f"{plural(len(data['services']), 'service')}, {plural(len(data['commands']), 'command')}, "
        f"{plural(len(data['config_files']), 'config root')}"
    )


def _show(data: dict[str, list[dict[str, str]]]) -> str:
    sections = (("services", "services"), ("commands", "commands"), ("config_files", "config roots"))
    return "\n".join(f"{title}:\n{shown_entries(data[key], indent='  ')}" for key, title in sections)


def shown_entries(entries: list[dict[str, str]], indent: str = "") -> str:
    """Named entries (as `_entries` makes them) for a person: one `name: about` line each."""
    return "\n".join(f"{indent}{entry['name']}: {entry['about']}" for entry in entries) or f"{indent}(none)"
