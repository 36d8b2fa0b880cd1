"""Services and where their logs are."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from config.policy_base import Strict, absolute


class Service(Strict):
    description: str = ""
    logs: list[Path] = Field(min_length=1, description="log files of this service, newest last")

    def resolved(self, base: Path) -> Service:
        return self.model_copy(update={"logs": [absolute(p, base) for p in self.logs]})
