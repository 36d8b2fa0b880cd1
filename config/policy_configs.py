"""Config files the model may read."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from config.policy_base import Strict, absolute


class ConfigFile(Strict):
    description: str = ""
    path: Path
    max_bytes: int = Field(default=256_000, gt=0, le=10_000_000)

    def resolved(self, base: Path) -> ConfigFile:
        return self.model_copy(update={"path": absolute(self.path, base)})
