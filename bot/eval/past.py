"""A scenario's past threads as incident memory keeps them: written through the same
Recollection the front ends use, each as of its `days_ago`, for opsbot's loop to recall."""

from __future__ import annotations

from datetime import datetime

from ...config.policy import Policy
from ...config.settings import IncidentMemory
from ..agent import Recollection, Reply, StopReason
from ..incidents import InProcessIncidents
from .suite import PastThread


def recollection(past: list[PastThread], policy: Policy, now: datetime) -> Recollection | None:
    """Incident memory holding `past`, or None when the scenario has none."""
    if not past:
        return None
    when = {"now": now.timestamp()}
    memory = Recollection(
        IncidentMemory(enabled=True), policy=policy, store=InProcessIncidents(clock=lambda: when["now"])
    )
    for n, thread in enumerate(past):
        when["now"] = now.timestamp() - thread.days_ago * 86400
        reply = Reply(thread=f"eval:past:{n}", text=thread.answer, stop_reason=StopReason.answered)
        memory.remember(thread.question, reply, None)
    when["now"] = now.timestamp()
    return memory
