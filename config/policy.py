"""The operator's policy: which services exist, where their logs are, what may be read and run.

Paths in a policy are resolved against the directory of the YAML file that declared them, so a
config directory can be moved as a whole.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

# Names are what the model and Slack users type: short, lower-case, no spaces.
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,62}$")]


class Strict(BaseModel):
    """Unknown keys are errors: a typo in policy must not silently widen or narrow it."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Service(Strict):
    description: str = ""
    logs: list[Path] = Field(min_length=1, description="log files of this service, newest last")


class Command(Strict):
    description: str
    argv: list[str] = Field(min_length=1, description="fixed argv; no shell, no free arguments")
    timeout_s: float = Field(default=10.0, gt=0, le=300)
    max_output_bytes: int = Field(default=64_000, gt=0, le=10_000_000)

    @field_validator("argv")
    @classmethod
    def _no_control_characters(cls, argv: list[str]) -> list[str]:
        for arg in argv:
            if re.search(r"[\x00\r\n]", arg):
                raise ValueError(f"argument {arg!r} contains NUL, CR or LF")
        return argv


class ConfigFile(Strict):
    description: str = ""
    path: Path
    max_bytes: int = Field(default=256_000, gt=0, le=10_000_000)


class Policy(Strict):
    services: dict[Name, Service] = Field(default_factory=dict)
    commands: dict[Name, Command] = Field(default_factory=dict)
    config_files: dict[Name, ConfigFile] = Field(default_factory=dict)

    def resolved(self, base: Path) -> Policy:
        """The same policy with every relative path made absolute against `base`."""

        def absolute(path: Path) -> Path:
            return path if path.is_absolute() else (base / path).resolve()

        return self.model_copy(
            update={
                "services": {
                    name: s.model_copy(update={"logs": [absolute(p) for p in s.logs]})
                    for name, s in self.services.items()
                },
                "config_files": {
                    name: c.model_copy(update={"path": absolute(c.path)}) for name, c in self.config_files.items()
                },
            }
        )
