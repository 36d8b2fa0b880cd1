"""Services, where their logs are, and who may read them."""

from __future__ import annotations

from datetime import UTC, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from config.policy_base import Access, Strict, absolute


class Service(Strict):
    description: str = ""
    logs: list[Path] = Field(
        min_length=1,
        description=(
            "log files or glob patterns (logs/app-*.log); each file's rotated siblings "
            "(app.log.1, app.log.2.gz, app.log-20261128.gz) are read too, newest data first"
        ),
    )
    timezone: str | None = Field(
        default=None,
        description="IANA zone (UTC, Europe/Berlin) of log timestamps written without an offset; "
        "default: this host's local time, as syslog writes them",
    )
    access: Access = Field(default_factory=Access, description="who may read these logs; default: anyone")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            _zone(value)  # a typo must fail at load time, not at 3 am on the first since= query
        return value

    def zone(self) -> tzinfo | None:
        """The zone of offset-less timestamps; None means this host's local time."""
        return None if self.timezone is None else _zone(self.timezone)

    def resolved(self, base: Path) -> Service:
        return self.model_copy(update={"logs": [absolute(p, base) for p in self.logs]})


def _zone(name: str) -> tzinfo:
    # UTC needs no zone database, which slim containers often lack.
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as UTC or Europe/Berlin") from exc
