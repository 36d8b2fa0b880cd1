"""The whole policy: its parts together, paths resolved, and the checks that need more than one part.

Paths are resolved against the directory of the YAML file that declared them, so a config
directory can be moved as a whole. A service's `log_command` must name a declared `risk: read`
command whose parameters query_logs can fill (`log_command_problem`, which query_logs uses too).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .alertmanagers import AlertmanagerSource
from .base import Name, Strict, absolute
from .commands import Command
from .configs import ConfigFile
from .mcp import MAX_OFFERED_NAME, McpServer, ServerName, long_names
from .metrics import MetricsSource
from .runbooks import Runbook
from .services import Service

# The parameters query_logs fills in a log_command (config/policy/services.py says how).
FILLED_PARAMS = ("since", "lines")


class Policy(Strict):
    services: dict[Name, Service] = Field(default_factory=dict)
    commands: dict[Name, Command] = Field(default_factory=dict)
    config_files: dict[Name, ConfigFile] = Field(default_factory=dict)
    metrics: dict[Name, MetricsSource] = Field(default_factory=dict)
    alertmanagers: dict[Name, AlertmanagerSource] = Field(default_factory=dict)
    mcp: dict[ServerName, McpServer] = Field(default_factory=dict)
    runbooks_dir: Path | None = Field(default=None, description="a directory of runbook YAML files, one each")
    runbooks: dict[Name, Runbook] = Field(
        default_factory=dict, description="loaded from runbooks_dir by config/runbooks.py (or given inline)"
    )

    def resolved(self, base: Path) -> Policy:
        """The same policy with every relative path made absolute against `base`."""
        return self.model_copy(
            update={
                "runbooks_dir": absolute(self.runbooks_dir, base) if self.runbooks_dir else None,
                "services": {name: s.resolved(base) for name, s in self.services.items()},
                "commands": {name: c.resolved(base) for name, c in self.commands.items()},
                "config_files": {name: c.resolved(base) for name, c in self.config_files.items()},
                "mcp": {name: m.resolved(base) for name, m in self.mcp.items()},
            }
        )

    @model_validator(mode="after")
    def _log_commands_can_run(self) -> Policy:
        # Raised as a ValidationError located at services.<name>.log_command, so check-config
        # points at that line rather than at `policy:`.
        errors = [
            InitErrorDetails(
                type=PydanticCustomError("value_error", "{problem}", {"problem": problem}),
                loc=("services", name, "log_command"),
                input=service.log_command,
            )
            for name, service in self.services.items()
            if service.log_command is not None
            and (problem := log_command_problem(self, service.log_command)) is not None
        ]
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    @model_validator(mode="after")
    def _mcp_names_fit(self) -> Policy:
        if too_long := long_names(self.mcp):
            raise ValueError(
                f"MCP tools are offered as <server>__<tool>, at most {MAX_OFFERED_NAME} characters; too long: "
                + ", ".join(too_long)
            )
        return self


def log_command_problem(policy: Policy, name: str) -> str | None:
    """Why command `name` cannot be a service's log_command, or None."""
    spec = policy.commands.get(name)
    if spec is None:
        declared = ", ".join(sorted(policy.commands)) or "none"
        return f"log_command {name!r} is not declared under policy.commands (declared: {declared})"
    if spec.risk != "read":
        return f"log_command {name!r} is risk: {spec.risk}; a command that reads logs must be risk: read"
    unfilled = sorted(key for key, param in spec.params.items() if key not in FILLED_PARAMS and param.required)
    if unfilled:
        return (
            f"log_command {name!r} has parameter(s) {', '.join(unfilled)} without a default; query_logs fills "
            f"only {' and '.join(FILLED_PARAMS)}"
        )
    return None
