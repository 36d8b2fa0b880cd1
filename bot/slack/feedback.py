"""Feedback on answers: Slack's native feedback buttons (blocks.py `feedback_blocks`) name the
agent run whose answer they end, and a click is taken only for a run opsbot remembers answering
there.

Before an answer is shown, its run is remembered with its thread (`answering`), for as long as
threads are (`memory.ttl_s`). A click (`click`) is then refused, nothing recorded, when its value
is not one opsbot writes, names a run opsbot does not remember (forgotten, or never one), or is
on a message of another channel or thread than the run answered in. Otherwise the verdict is
stored as the clicker's on that answer: a click repeated (a double click, a retry) changes nothing
and is neither recorded nor counted again; another verdict replaces the earlier one and is
recorded and counted as given. Each verdict recorded is an audit record of kind `feedback` (who,
positive or negative, the run, the thread and its link) and one `opsbot_feedback_total`.
"""

from __future__ import annotations

import json
import logging
from typing import NamedTuple

from ...tools.durations import duration_text
from ..redis.client import REDIS_ERRORS
from ..telemetry import metrics
from ..telemetry.audit import Audit, AuditRecord
from .blocks import POSITIVE, feedback_of
from .jobs import ThreadRef
from .state import SlackState

log = logging.getLogger("opsbot.feedback")

_THUMB = {"positive": "👍", "negative": "👎"}
NOT_OURS = "These feedback buttons are not on the answer they name, so nothing was recorded."
UNREACHABLE = "opsbot cannot reach its Redis just now, so your feedback was not recorded. Click again in a minute."


class FeedbackClick(NamedTuple):
    """A click on feedback buttons: who, on a message of which channel and thread, and the button's value."""

    user: str
    channel: str
    thread_ts: str | None
    value: str


class AnswerFeedback:
    def __init__(self, state: SlackState, audit: Audit, ttl_s: int) -> None:
        """`ttl_s`: how long an answer takes feedback (and its verdicts are kept)."""
        self.state = state
        self.audit = audit
        self.ttl_s = ttl_s

    def answering(self, run: str, thread: ThreadRef) -> None:
        """Remember that `run` answers in `thread`, before the answer is shown; best effort: the
        answer goes out regardless, and a click on it is then refused as unknown."""
        try:
            self.state.answering(run, thread, self.ttl_s)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_feedback")
            log.warning("run %s's answer will not take feedback: %s", run, exc)

    def click(self, click: FeedbackClick) -> str | None:
        """Take a click: what to tell the clicker (only they see it), or None for a repeat."""
        given = feedback_of(click.value)
        if given is None:
            log.info("refused feedback from %s: a value opsbot never wrote (%.40r)", click.user, click.value)
            return NOT_OURS
        try:
            where = self.state.answered_in(given.run)
            if where is None:
                log.info("refused feedback from %s on run %s: not remembered", click.user, given.run)
                return (
                    f"opsbot no longer knows this answer (answers take feedback for {duration_text(self.ttl_s)}), "
                    "so your feedback was not recorded."
                )
            if not _clicked_on(where, click):
                log.info("refused feedback from %s on run %s: clicked in another thread", click.user, given.run)
                return NOT_OURS
            vote = self.state.record_feedback(given.run, click.user, given.verdict, self.ttl_s)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_feedback")
            log.error("feedback from %s on run %s not recorded: %s", click.user, given.run, exc)
            return UNREACHABLE
        log.info(json.dumps({"event": "feedback", "run": given.run, "user": click.user, "value": given.verdict}))
        if not vote.changed:
            return None
        self.audit.record(
            AuditRecord.made(
                "feedback",
                who=f"slack:{click.user}",
                thread=where.key,
                run=given.run,
                status=given.verdict,
                link=where.link,
            )
        )
        metrics.feedback(given.verdict)
        thumb = _THUMB[given.verdict]
        if vote.before is not None:
            return f"Your feedback on this answer is now {thumb} (it was {_THUMB.get(vote.before, vote.before)})."
        if given.verdict == POSITIVE:
            return f"Thanks: your {thumb} on this answer is recorded."
        return f"Thanks: your {thumb} on this answer is recorded. Saying in the thread what was wrong helps most."


def _clicked_on(where: ThreadRef, click: FeedbackClick) -> bool:
    """Whether the click was on a message where the run answered: its channel, and its thread when
    it has one (a `/ops` reply only its asker sees has none)."""
    return click.channel == where.channel and (not where.has_root or click.thread_ts == where.thread_ts)
