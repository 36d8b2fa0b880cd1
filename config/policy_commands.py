"""Diagnostic commands the model may run, by name."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator

from config.policy_base import Strict


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

    def resolved(self, base: Path) -> Command:
        return self
