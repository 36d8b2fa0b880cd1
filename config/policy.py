"""The operator's policy: which services exist, where their logs are, what may be read and run.

Each part lives in its own module (policy_services, policy_commands, policy_configs); paths are
resolved against the directory of the YAML file that declared them, so a config directory can
be moved as a whole.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from config.policy_base import Access, Name, Principal, Strict
from config.policy_commands import Command
from config.policy_configs import ConfigFile
from config.policy_services import Service

__all__ = ["Access", "Command", "ConfigFile", "Name", "Policy", "Principal", "Service", "Strict"]


class Policy(Strict):
    services: dict[Name, Service] = Field(default_factory=dict)
    commands: dict[Name, Command] = Field(default_factory=dict)
    config_files: dict[Name, ConfigFile] = Field(default_factory=dict)

    def resolved(self, base: Path) -> Policy:
        """The same policy with every relative path made absolute against `base`."""
        return self.model_copy(
            update={
                "services": {name: s.resolved(base) for name, s in self.services.items()},
                "commands": {name: c.resolved(base) for name, c in self.commands.items()},
                "config_files": {name: c.resolved(base) for name, c in self.config_files.items()},
            }
        )
