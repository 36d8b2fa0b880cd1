"""list_services: what this opsbot can look at, so the model never has to guess a name."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from config.policy import Policy, Principal
from tools.base import Tool, ToolResult


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def list_services_tool(policy: Policy) -> Tool:
    def run(_: NoArgs, principal: Principal | None) -> ToolResult:
        return ToolResult.success(
            {
                "services": {name: s.description for name, s in sorted(policy.services.items())},
                "commands": {name: c.summary() for name, c in sorted(policy.commands.items())},
                "config_files": {name: c.description for name, c in sorted(policy.config_files.items())},
            }
        )

    return Tool(
        name="list_services",
        description="The services (with logs), diagnostic commands and config files you may use, by name.",
        args_model=NoArgs,
        run=run,  # type: ignore[arg-type]
    )
