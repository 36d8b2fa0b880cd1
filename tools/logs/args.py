"""The arguments of query_logs, as the model writes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from .levels import UnknownLevel, parse_level


class QueryLogsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field(description="service name, as listed by list_services")
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] | None = Field(
        default=None,
        description="minimum level; ERROR shows only errors, WARN warnings and errors "
        "(WARNING, ERR, CRIT, FATAL, E and syslog or pino numbers are understood too)",
    )
    since: str | None = Field(
        default=None, max_length=40, description="only entries at or after this time: 15m, 2h, 1d or ISO-8601"
    )
    until: str | None = Field(
        default=None, max_length=40, description="only entries at or before this time: 15m, 2h, 1d or ISO-8601"
    )
    contains: str | None = Field(default=None, max_length=200, description="case-insensitive substring")
    regex: str | None = Field(
        default=None,
        max_length=200,
        description="regular expression searched within each entry, ^ and $ at its lines' ends "
        "(Python syntax, case-sensitive unless (?i))",
    )
    limit: int = Field(default=50, ge=1, le=500, description="newest matching entries to return")

    @field_validator("level", mode="before")
    @classmethod
    def _level_spellings(cls, value: Any) -> Any:
        # Models write "error", "WARNING" or 50 as often as "ERROR"; refusing those wastes a step.
        # An unknown level is refused with the levels and the nearest one, never guessed at: a
        # wrong guess would answer a different question without saying so.
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise PydanticCustomError(
                "level_type", "a level is a name such as ERROR or a number, not {kind}", {"kind": type(value).__name__}
            )
        level = parse_level(value)
        if isinstance(level, UnknownLevel):
            # The message goes in as a value, not as the template: braces in it stay as written.
            raise PydanticCustomError("unknown_level", "{reason}", {"reason": level.message})
        return level.value
