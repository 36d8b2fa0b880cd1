"""Alerts into Slack: one message per alert group, updated in place, and the matching runbook
runs in its thread, one per distinct set of parameters.

The webhook only queues (bot/alerts/queue.py, in Redis, so it answers at once and an accepted
alert survives a restart); one worker per process takes alerts off the queue in order and hands
runs to the worker pool, so a slow runbook never holds up the next alert. A group (Alertmanager's
groupKey, a PagerDuty incident: bot/slack/alert_groups.py) is posted once; the alerts that join,
repeat or resolve after it change what its message shows, and the worker draws the messages that
changed again when the queue runs dry (or every FLUSH_EVERY_S during a long storm), so a group of
100 alerts is one post and a few updates, not 100 posts. Runs are deduplicated by what they
would do (runbook and parameters), at most alerts.max_runs_per_group per group.

Handling an alert again (after a crash, or a failure) is harmless: posts are marked and looked
for before posting again, and a run's id comes from its group, runbook and parameters (one run,
whoever starts it).

A resolved alert leaves a tombstone: a firing notification of the same episode handled after it
(another process, a retry) is shown as resolved and runs nothing; a run whose alerts have all
resolved is cancelled. When every alert of a group has resolved, the thread says so once and the
group's next firing alert opens a new message.

Alert text is untrusted: labels fill runbook parameters only through a trigger's mapping and the
parameters' types; annotations are shown redacted and escaped, and given to the model as
delimited data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from slack_sdk import WebClient

from ...config.policy import Policy, Principal, Runbook, Trigger
from ...config.settings import AlertSettings
from ...tools.executor import Executor, ToolCall
from ...tools.redact import redact_text
from ..agent import Recollection, recalled_text
from ..agent.prompts import alert_first_look
from ..alerts import ALIVE_TTL_S, Alert, AlertQueue, alert_expression
from ..charts import chart_of
from ..redis.client import REDIS_ERRORS, RedisClient
from ..runbooks import RunbookEngine, RunRefused
from ..telemetry import metrics
from ..telemetry.audit import Audit, AuditRecord, Kind, LoggedAudit
from .alert_groups import AlertGroups, Claim
from .blocks import RECALLED, escape, group_blocks
from .charts import share_charts
from .delivery import WorkerPool
from .jobs import Job, ThreadRef
from .posting import post_once, post_or_log, replace

log = logging.getLogger("opsbot.alerts")

_THREAD_TTL_S = 7 * 24 * 3600
# After a failure, before the alert (or a cancel) is tried again.
RETRY_PAUSE_S = 2.0
# How long the worker blocks on an empty queue before it looks whether to stop: `stop` (at
# SIGTERM) waits up to this long.
QUEUE_WAIT_S = 1.0
# With group messages to draw again: how long the queue may stay empty before they are drawn
# (a webhook's alerts are queued back to back, so this waits out one notification), and how
# often at least during a storm that never lets the queue run dry.
FLUSH_WAIT_S = 0.2
FLUSH_EVERY_S = 2.0
# An approved command in flight cannot be stopped halfway: a resolve waits this long for it.
_CANCEL_PATIENCE_S = 600.0
# What an alert's chart shows: its expression over the last hour (as query_metrics reads `since`).
CHART_SINCE = "1h"


class _Match(NamedTuple):
    """The runbook an alert starts, and the trigger of it the alert matched."""

    runbook: Runbook
    trigger: Trigger


class AlertRouter:
    def __init__(
        self,
        policy: Policy,
        engine: RunbookEngine,
        *,
        client: WebClient,
        store: RedisClient,
        pool: WorkerPool,
        settings: AlertSettings,
        team: str,
        first_look: Callable[[Job], None] | None,
        owner: str,
        prefix: str = "opsbot:alerts",
        metrics: Executor | None = None,
        audit: Audit | None = None,
        recollection: Recollection | None = None,
    ) -> None:
        """`metrics` runs query_metrics for the chart of an alert that names its source (none: no
        charts); `audit` keeps each alert's firing and resolving, for a handoff."""
        self.audit = audit or LoggedAudit()
        self.recollection = recollection  # past incidents like an alert whose runbook runs, told in its thread
        self.policy = policy
        self.metrics = metrics
        self.engine = engine
        self.client = client
        self.redis = store
        self.pool = pool
        self.settings = settings
        self.team = team
        self.first_look = first_look
        self.prefix = prefix
        self.queue = AlertQueue(store, owner, prefix)
        self.groups = AlertGroups(store, prefix)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._changed: dict[str, tuple[Alert, ThreadRef]] = {}  # group -> an alert of it, its message
        self._changed_at = 0.0
        self._drawing = False

    def start(self) -> None:
        self._worker = threading.Thread(target=self._work, name="opsbot-alerts", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        """Stop taking alerts; the one being handled is finished first."""
        self._stop.set()
        if self._worker is not None:
            self._worker.join(timeout=10)

    def handle(self, alert: Alert) -> None:
        if alert.status == "resolved":
            self._resolved(alert)
            return
        match = self._match(alert)
        channel = (match.trigger.channel if match else None) or self.settings.channel
        if channel is None:
            log.error("alert %r has no channel: set alerts.channel or a trigger's channel", alert.title)
            return
        episode = self._resolved_episode(alert)
        self.groups.record(alert, "resolved before it was handled" if episode else "firing")
        thread = self._message(alert, channel)
        self._audit("alert_fired", alert, thread)
        remembered = {"team": thread.team, "channel": channel, "thread_ts": thread.thread_ts}
        self.redis.set(f"{self.prefix}:thread:{alert.key}", json.dumps(remembered), ex=_THREAD_TTL_S)
        if episode:
            return
        self._chart(alert, thread)
        if match is not None:
            self._recalled(alert, match.trigger, thread)
            self._run(alert, match.runbook, match.trigger, thread)
        elif self.settings.first_look and self.first_look is not None and self.groups.first_look(alert):
            details = "\n".join(f"{k}: {v}" for k, v in {**alert.labels, **alert.annotations}.items())
            self.first_look(
                Job(
                    id=f"alert:{alert.group_id}:{self.groups.generation(alert)}",
                    thread=thread,
                    user=alert.source,
                    text=alert_first_look(redact_text(alert.title), redact_text(details)),
                    principal=Principal(platform="webhook", user=alert.source, team=self.team, channel=channel),
                    ts=thread.thread_ts,
                )
            )

    def _message(self, alert: Alert, channel: str) -> ThreadRef:
        """The group's message: posted by its first alert, drawn again later for the others."""
        known = self.groups.message(alert)
        if known is not None:
            self._changed_group(alert, known)
            return known
        self.groups.open(alert)
        view = self.groups.view(alert)
        first = view.first if view is not None else alert
        root = post_once(
            self.client,
            channel,
            None,
            f"alert-group:{alert.group_id}:{self.groups.generation(alert)}",
            escape(f"🚨 {redact_text(first.title)}"),
            group_blocks(view) if view is not None else [],
            kind="opsbot_alert",
            check_first=True,
        )
        thread = ThreadRef(team=self.team, channel=channel, thread_ts=root)
        self.groups.remember_message(alert, thread)
        return thread

    def _chart(self, alert: Alert, thread: ThreadRef) -> None:
        """A chart of the alert's expression over the last hour in its thread, when the alert names
        a configured metrics source (bot/alerts/expression.py): once per group and expression,
        drawn on a worker (a slow source never holds up the next alert), skipped when all are busy."""
        executor, named = self.metrics, alert_expression(alert, self.policy.metrics)
        if executor is None or named is None:
            return
        digest = hashlib.sha256(f"{named.source}\0{named.expr}".encode()).hexdigest()[:16]
        name = f"alert-{alert.group_id}-{self.groups.generation(alert)}-{digest}"
        if not self.redis.set(f"{self.prefix}:chart:{name}", "1", nx=True, ex=_THREAD_TTL_S):
            return  # another alert of the group, or another process, has it
        # As the alert's first look asks: the source's `access` decides whether a webhook may query it.
        asker = Principal(platform="webhook", user=alert.source, team=self.team, channel=thread.channel)
        arguments = json.dumps({"source": named.source, "query": named.expr, "since": CHART_SINCE})
        call = ToolCall(name, "query_metrics", arguments)

        def draw() -> None:
            result = executor.run_one(call, asker).result
            chart = chart_of(call.name, result)
            if chart is None:
                log.info(
                    "no chart for alert %r: %s", alert.title, result.error.message if result.error else "no series"
                )
                return
            share_charts(self.client, thread.channel, thread.thread_ts, name, [chart], check_first=True)

        if not self.pool.submit(draw):
            log.info("no chart for alert %r: every worker is busy", alert.title)

    def _run(self, alert: Alert, runbook: Runbook, trigger: Trigger, thread: ThreadRef) -> None:
        missing = sorted(label for label in trigger.params.values() if label not in alert.labels)
        if missing:
            # A default standing in for a label the alert lacks could point a run at the wrong service.
            why = (
                f"Runbook `{runbook.id}` was not run: the alert has no label "
                f"{', '.join(repr(m) for m in missing)}, which its trigger maps to a parameter."
            )
            self._not_run(alert, thread, why)
            return
        params = {param: alert.labels[label] for param, label in trigger.params.items()}
        what = json.dumps([alert.group_id, self.groups.generation(alert), runbook.id, params], sort_keys=True)
        run_id = "alert-" + hashlib.sha256(what.encode()).hexdigest()[:24]
        claim = self.groups.claim_run(alert, run_id, runbook.id, params, self.settings.max_runs_per_group)
        self._changed_group(alert, thread)
        if claim is Claim.over:
            limit = self.settings.max_runs_per_group
            why = (
                f"Runbook `{runbook.id}` was not run for some alerts: this group has started its {limit} "
                "runs with other parameters (alerts.max_runs_per_group)."
            )
            self._not_run(alert, thread, why)
            return
        if claim is Claim.known:
            return  # the run another alert of the group started does what this one asks
        # The alert's name goes with the run, for the incident record it leaves (bot/agent/recollection.py).
        name = alert.labels.get("alertname", alert.title)
        origin = {**thread.place(), "alert": alert.key, "alert_group": alert.group_id, "alert_name": name}
        requested_by = Principal(platform="webhook", user=alert.source, team=self.team)

        def run() -> None:
            try:
                self.engine.start(runbook.id, params, origin, run_id=run_id, requested_by=requested_by)
            except RunRefused as exc:
                self._say(thread, f"{run_id}:refused", f"Runbook `{runbook.id}` was not run: {exc}")
                return
            if self._resolved_episode(alert):
                self._cancel(run_id)  # resolved while it started

        if not self.pool.submit(run):
            run()  # every worker busy: this alert's run goes on here rather than wait or be lost

    def _not_run(self, alert: Alert, thread: ThreadRef, why: str) -> None:
        """`alert` starts no run, for `why`: listed in the group's message; said in its thread
        the first time the group meets that reason."""
        self._changed_group(alert, thread)
        if self.groups.not_run(alert, why):
            digest = hashlib.sha256(why.encode()).hexdigest()[:16]
            self._say(thread, f"not-run:{alert.group_id}:{self.groups.generation(alert)}:{digest}", why)

    def _resolved(self, alert: Alert) -> None:
        self.redis.set(f"{self.prefix}:resolved:{alert.key}", _episode(alert), ex=_THREAD_TTL_S)
        raw = self.redis.get(f"{self.prefix}:thread:{alert.key}")
        if not raw:
            log.info("resolved alert %r not seen firing yet; a late firing notification will run nothing", alert.title)
            return
        known = json.loads(raw)
        thread = ThreadRef(team=known["team"], channel=known["channel"], thread_ts=known["thread_ts"])
        self.groups.record(alert, "resolved")
        self._audit("alert_resolved", alert, thread)
        for run_id in self.groups.runs_done_with(alert):  # every alert a run was for has resolved
            if not self.pool.submit(functools.partial(self._cancel, run_id)):
                self._cancel(run_id)
        view = self.groups.view(alert)
        if view is None or not view.resolved:
            self._changed_group(alert, thread)
            return
        count = len(view.members)
        note = f"✅ Resolved: {redact_text(view.first.title)}" + (f" (all {count} alerts)." if count > 1 else ".")
        if view.runs:
            note += " What its runbook still waited for is cancelled."
        self._say(thread, f"resolved:{alert.group_id}:{self.groups.generation(alert)}", note)
        replace(self.client, thread.channel, thread.thread_ts, escape(note), group_blocks(view))
        self._changed.pop(alert.group_id, None)
        self.groups.end_generation(alert)

    def _audit(self, kind: Kind, alert: Alert, thread: ThreadRef) -> None:
        """The alert's firing or resolving in the audit trail, in its thread; its labels as redacted."""
        name = alert.labels.get("alertname", alert.title)
        who = f"webhook:{alert.source}"
        self.audit.record(
            AuditRecord.made(kind, who=who, thread=thread.key, tool=name, args=alert.labels, status=alert.status)
        )

    def _changed_group(self, alert: Alert, thread: ThreadRef) -> None:
        if not self._changed:
            self._changed_at = time.monotonic()
        self._changed[alert.group_id] = (alert, thread)

    @property
    def redraw_pending(self) -> bool:
        """Whether some group's message waits to be drawn again (the queue has not run dry yet)."""
        return bool(self._changed) or self._drawing

    def redraw(self) -> None:
        """Draw again the messages of the groups that changed since they were last drawn."""
        self._drawing = True
        try:
            changed, self._changed = self._changed, {}
            for alert, thread in changed.values():
                view = self.groups.view(alert)
                if view is not None:
                    title = escape(f"🚨 {redact_text(view.first.title)}")
                    replace(self.client, thread.channel, thread.thread_ts, title, group_blocks(view))
        finally:
            self._drawing = False

    def _cancel(self, run_id: str) -> None:
        deadline = time.monotonic() + _CANCEL_PATIENCE_S
        while True:
            try:
                self.engine.cancel(run_id, "the alert resolved")
                return
            except RunRefused as exc:  # an approved command is running: cancel right after it
                if time.monotonic() >= deadline or self._stop.wait(RETRY_PAUSE_S):
                    log.warning("run %s not cancelled: %s", run_id, exc)
                    return

    def _resolved_episode(self, alert: Alert) -> bool:
        """Whether this alert's episode (same alert, same start) was already resolved."""
        tomb = self.redis.get(f"{self.prefix}:resolved:{alert.key}")
        return tomb is not None and (str(tomb) == _episode(alert) or not str(tomb) or alert.starts_at is None)

    def _match(self, alert: Alert) -> _Match | None:
        for runbook in sorted(self.policy.runbooks.values(), key=lambda r: r.id):
            for trigger in runbook.triggers:
                if trigger.matches(alert.source, alert.labels):
                    return _Match(runbook, trigger)
        return None

    def _recalled(self, alert: Alert, trigger: Trigger, thread: ThreadRef) -> None:
        """Past incidents like `alert`, or why none is recalled, in its thread (an alert that gets a
        first look has them from its run instead). Matched on its name and the labels its runbook
        takes, as its run's record keeps them: hosts and devices would make every alert look new."""
        if self.recollection is None:
            return
        asker = Principal(platform="webhook", user=alert.source, team=self.team, channel=thread.channel)
        taken = [alert.labels[label] for label in trigger.params.values() if label in alert.labels]
        text = " ".join([redact_text(alert.title), alert.labels.get("alertname", ""), *taken])
        told = recalled_text(self.recollection.recall(text, asker, thread.key), time.time(), RECALLED)
        if told:
            marker = f"recalled:{alert.group_id}:{self.groups.generation(alert)}"
            post_or_log(self.client, thread.channel, thread.thread_ts, marker, told, kind="opsbot_alert_note")

    def _say(self, thread: ThreadRef, marker: str, text: str) -> None:
        post_or_log(
            self.client,
            thread.channel,
            thread.thread_ts,
            marker,
            escape(text),
            kind="opsbot_alert_note",
            check_first=True,
        )

    def _work(self) -> None:
        last_sweep = 0.0
        unreachable = False
        while not self._stop.is_set():
            raw = None
            try:
                if time.monotonic() - last_sweep >= ALIVE_TTL_S / 3:
                    self.queue.alive()
                    self.queue.requeue_orphans()
                    last_sweep = time.monotonic()
                # While messages wait to be drawn again, a short wait: the queue running dry draws them.
                raw = self.queue.next(FLUSH_WAIT_S if self._changed else QUEUE_WAIT_S)
                unreachable = False
                if raw is None:
                    self.redraw()
                    continue
                if self._stop.is_set():
                    self.queue.give_back(raw)  # taken while stopping: another process handles it
                    self.redraw()
                    return
                self.handle(Alert.model_validate_json(raw))
                self.queue.done(raw)
                if self._changed and time.monotonic() - self._changed_at >= FLUSH_EVERY_S:
                    self.redraw()
            except REDIS_ERRORS as exc:
                metrics.redis_error("alerts")
                # One line per outage: the janitor says the rest, and queued alerts wait in Redis.
                if not unreachable:
                    log.error("alerts: Redis is unreachable (%s); queued alerts are handled once it answers", exc)
                unreachable = True
                self._give_back(raw)
                self._stop.wait(RETRY_PAUSE_S)
            except Exception:
                log.exception("alert handling failed; it is tried again shortly")
                self._give_back(raw)
                self._stop.wait(RETRY_PAUSE_S)

    def _give_back(self, raw: str | None) -> None:
        if raw is None:
            return
        try:
            self.queue.give_back(raw)
        except REDIS_ERRORS:
            pass  # it stays this process's; once the process stops, another takes it over


def _episode(alert: Alert) -> str:
    return alert.starts_at.isoformat() if alert.starts_at else ""
