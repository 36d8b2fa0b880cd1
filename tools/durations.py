"""Lengths of time as people and the model write them: `15m`, `2h ago`, `30 seconds` read into
seconds (query_logs' and query_metrics' ages and steps, a silence's duration), and seconds written
back the short way (`2h`, `1d1h`)."""

from __future__ import annotations

import re

_RELATIVE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)(?:\s+ago)?", re.I
)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration_seconds(text: str) -> float | None:
    """Seconds of a relative age or length (`15m`, `2h ago`, `30 seconds`), None for anything else."""
    relative = _RELATIVE.fullmatch(text.strip())
    return float(relative[1]) * _UNIT_SECONDS[relative[2][0].lower()] if relative else None


def duration_text(seconds: float) -> str:
    """`seconds` the short way, largest units first: 7200 -> `2h`, 90000 -> `1d1h`, 90 -> `1m30s`."""
    parts: list[str] = []
    left = seconds
    for unit in ("d", "h", "m"):
        count, left = divmod(left, _UNIT_SECONDS[unit])
        if count:
            parts.append(f"{count:g}{unit}")
    if left or not parts:
        parts.append(f"{left:g}s")
    return "".join(parts)
