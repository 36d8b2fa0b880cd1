"""The arguments of query_logs, as the model writes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "FATAL": "ERROR", "CRITICAL": "ERROR", "CRIT": "ERROR"}


class QueryLogsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field(description="service name, as listed by list_services")
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] | None = Field(
        default=None, description="minimum level; ERROR shows only errors, WARN warnings and errors"
    )
    since: str | None = Field(
        default=None, max_length=40, description="only lines at or after this time: 15m, 2h, 1d or ISO-8601"
    )
    until: str | None = Field(
        default=None, max_length=40, description="only lines at or before this time: 15m, 2h, 1d or ISO-8601"
    )
    contains: str | None = Field(default=None, max_length=200, description="case-insensitive substring")
    regex: str | None = Field(
        default=None,
        max_length=200,
        description="regular expression searched within each line (Python syntax, case-sensitive unless (?i))",
    )
    limit: int = Field(default=50, ge=1, le=500, description="newest matching lines to return")

    @field_validator("level", mode="before")
    @classmethod
    def _level_aliases(cls, value: Any) -> Any:
        # Models write "error" or "WARNING" as often as "ERROR"; refusing those wastes a step.
        if isinstance(value, str):
            upper = value.strip().upper()
            return _ALIASES.get(upper, upper)
        return value
