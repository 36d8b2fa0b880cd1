"""Services, where their logs are, and who may read them.

The format, one entry under `policy.services`; at least one of `logs`, `journald` and
`log_command` is required, and a service may have all three (query_logs reads each and merges
their lines by time):

```yaml
checkout:
  description: checkout-api, the public checkout endpoint
  logs: [logs/checkout.log, logs/worker-*.log]   # files or globs; rotations and .gz read too
  journald: [checkout.service]                   # systemd units, read with journalctl
  log_command: checkout-pod-logs                 # a command under policy.commands (risk: read)
  timezone: UTC                                  # for timestamps written without an offset
  format: auto                                   # or logcat (Android's one-letter levels)
  time: {format: "%Y%m%d-%H:%M:%S:%f"}           # only when auto cannot read the lines' time
  access: {groups: [oncall]}                     # who may read these logs; empty = anyone
```

`format: auto` (the default) recognises every format of the documented set line by line, with
nothing to set: JSON lines, logfmt, klog/glog, syslog (RFC 3164 and 5424, with or without
`<PRI>`), nginx and Apache access and error logs, Docker json-file and CRI lines, journald
short-iso, Python's and Java's default layouts (logback's time-only lines dated from the file's
last write), log15. `format: logcat` adds Android logcat's one-letter level, which auto does not
read: a lone `E` between spaces is too common in other logs to be taken for a level.

`time` declares how lines carry their time where auto cannot know: a strptime `format`, a
`regex` with a group named `stamp`, or `epoch: s|ms` (each form is below).

`journald` units are read with `journalctl` (found on a fixed system PATH when the tool is
built), newest entries first and within caps; the minimum level becomes journalctl's
`--priority` (ERROR = err and worse, WARN = warning, INFO = info and notice), since/until its
`--since`/`--until`.

`log_command` names a declared command whose output is the service's log, e.g.

```yaml
commands:
  checkout-pod-logs:
    description: logs of the checkout pods
    argv: [kubectl, logs, -n, shop, -l, app=checkout, --timestamps, "--since={since}", "--tail={lines}"]
    params:
      since: {pattern: "[0-9]{1,9}s", default: "86400s"}
      lines: {min: 1, max: 20000, default: 5000}
```

query_logs fills two parameters if the command declares them: `since`, the query's `since` as
whole seconds before now with an `s` suffix (`7200s`, what kubectl's `--since` and Go durations
read; the parameter's default when the query gives none), and `lines`, how many of the newest
lines to fetch (the parameter's max, at most query_logs' own cap). Every other parameter needs a
default. The command must be `risk: read`, and the asker needs both the service's and the
command's `access`. Its output must be oldest line first (as `kubectl logs` writes it); write
timestamps (`--timestamps`) so since/until and the merge by time can work.
"""

from __future__ import annotations

from datetime import UTC, tzinfo
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, StringConstraints, ValidationInfo, field_validator

from .base import Access, Name, Strict, absolute
from .logtime import LineTime

# A systemd unit name (nginx.service, getty@tty1.service, app-*.service as journalctl's glob);
# never starting with '-', so it cannot be read as an option.
UnitName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.@:*\\][A-Za-z0-9_.@:*\\-]{0,255}$")]

LogFormat = Literal["auto", "logcat"]
# Formats `auto` recognises on its own: naming one as the format gets an answer that says so.
AUTO_FORMATS = frozenset(
    "json logfmt klog glog syslog rfc3164 rfc5424 access nginx apache docker cri containerd journald "
    "python logback java log15".split()
)


class Service(Strict):
    description: str = ""
    # `journald` and `log_command` come before `logs` so that logs' validator can see them.
    journald: list[UnitName] = Field(
        default_factory=list, description="systemd units whose journal is read with journalctl (nginx.service)"
    )
    log_command: Name | None = Field(
        default=None, description="a command under policy.commands whose output is this service's log"
    )
    logs: list[Path] = Field(
        default_factory=list,
        validate_default=True,
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
    format: LogFormat = Field(
        default="auto",
        description="auto: every format of the documented set is recognised line by line; logcat: "
        "also read Android logcat's one-letter level (E, W, ...), which auto leaves alone because a "
        "lone letter between spaces is common in other logs",
    )
    time: LineTime | None = Field(
        default=None,
        description="how each line carries its time, when auto cannot know (a year-less or unusual stamp, "
        "an epoch field, a file name before the stamp): [below](#policyservicesnametime-how-lines-carry-their-time); "
        "default: auto",
    )
    access: Access = Field(default_factory=Access, description="who may read these logs; default: anyone")

    @field_validator("format", mode="before")
    @classmethod
    def _settable_format(cls, value: object) -> object:
        # Naming a format auto reads anyway is a fair guess at the setting: say so, not just "invalid".
        if isinstance(value, str) and value.strip().lower() in AUTO_FORMATS:
            raise ValueError(
                f"format {value!r} is recognised without setting it (format: auto reads every format of the "
                "documented set line by line); only logcat needs format: logcat"
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            _zone(value)  # a typo must fail at load time, not at 3 am on the first since= query
        return value

    @field_validator("logs")
    @classmethod
    def _some_source(cls, logs: list[Path], info: ValidationInfo) -> list[Path]:
        # Reported on `logs`, so check-config points at the service that has no source. Skipped
        # when journald or log_command was itself invalid: that error is reported already.
        others = ("journald", "log_command")
        if not logs and all(key in info.data for key in others) and not any(info.data[key] for key in others):
            raise ValueError("a service needs at least one log source: logs (files), journald (units) or log_command")
        return logs

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
