"""A bare runbook run record, for tests of the run stores (nothing runs it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from opsbot.bot.runbooks import RunRecord


def run_record(run_id: str, status: str = "running", version: int = 0, ms_later: int = 0) -> RunRecord:
    """`ms_later`: created that much after now (stores list unfinished runs oldest first)."""
    now = datetime.now(UTC) + timedelta(milliseconds=ms_later)
    return RunRecord.model_validate(
        {
            "id": run_id,
            "runbook": "x",
            "params": {},
            "status": status,
            "steps": [],
            "created_at": now,
            "updated_at": now,
            "version": version,
        }
    )
