"""Alerts into Slack: the alert posted in its channel, the matching runbook run in its thread.

The webhook only queues (bot/alerts/queue.py, in Redis, so it answers at once and an accepted
alert survives a restart); one worker per process takes alerts off the queue in order and hands
runs to the worker pool, so a slow runbook never holds up the next alert. Handling an alert
again (after a crash, or a failure) is harmless: the run id comes from the delivery (one run,
whoever starts it) and every post is marked and looked for before posting again.

A resolved alert leaves a tombstone: a firing notification of the same episode handled after it
(another process, a retry) posts the alert as resolved and runs nothing; a run started just
before the tombstone is cancelled as soon as it is seen.

Alert text is untrusted: labels fill runbook parameters only through a trigger's mapping and the
parameters' types; annotations are shown redacted and escaped, and given to the model as
delimited data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable

from slack_sdk import WebClient

from bot import metrics
from bot.alerts.models import Alert
from bot.alerts.queue import ALIVE_TTL_S, AlertQueue
from bot.prompts import alert_first_look
from bot.redis_client import REDIS_ERRORS, RedisClient
from bot.runbooks.engine import RunbookEngine, RunRefused
from bot.slack.blocks import alert_blocks, escape
from bot.slack.delivery import WorkerPool
from bot.slack.jobs import Job, ThreadRef
from bot.slack.posting import post_once, post_or_log, replace
from config.policy import Policy, Principal, Runbook, Trigger
from config.settings import AlertSettings
from tools.redact import redact_text

log = logging.getLogger("opsbot.alerts")

_THREAD_TTL_S = 7 * 24 * 3600
# After a failure, before the alert (or a cancel) is tried again.
RETRY_PAUSE_S = 2.0
# How long the worker blocks on an empty queue before it looks whether to stop: `stop` (at
# SIGTERM) waits up to this long.
QUEUE_WAIT_S = 1.0
# An approved command in flight cannot be stopped halfway: a resolve waits this long for it.
_CANCEL_PATIENCE_S = 600.0


class AlertRouter:
    def __init__(
        self,
        policy: Policy,
        engine: RunbookEngine,
        client: WebClient,
        store: RedisClient,
        pool: WorkerPool,
        settings: AlertSettings,
        team: str,
        first_look: Callable[[Job], None] | None,
        owner: str,
        prefix: str = "opsbot:alerts",
    ) -> None:
        self.policy = policy
        self.engine = engine
        self.client = client
        self.redis = store
        self.pool = pool
        self.settings = settings
        self.team = team
        self.first_look = first_look
        self.prefix = prefix
        self.queue = AlertQueue(store, owner, prefix)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None

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
        channel = (match[1].channel if match else None) or self.settings.channel
        if channel is None:
            log.error("alert %r has no channel: set alerts.channel or a trigger's channel", alert.title)
            return
        episode = self._resolved_episode(alert)
        root = post_once(
            self.client,
            channel,
            None,
            f"alert:{alert.delivery}",
            escape(f"🚨 {redact_text(alert.title)}"),
            alert_blocks(alert, resolved=episode),
            kind="opsbot_alert",
            check_first=True,
        )
        thread = ThreadRef(team=self.team, channel=channel, thread_ts=root)
        run_id = "alert-" + hashlib.sha256(alert.delivery.encode()).hexdigest()[:24]
        remembered = {"team": thread.team, "channel": channel, "thread_ts": root, "run": run_id if match else ""}
        self.redis.set(f"{self.prefix}:thread:{alert.key}", json.dumps(remembered), ex=_THREAD_TTL_S)
        if episode:
            return
        if match is not None:
            self._run(alert, match[0], match[1], thread, run_id)
        elif self.settings.first_look and self.first_look is not None:
            details = "\n".join(f"{k}: {v}" for k, v in {**alert.labels, **alert.annotations}.items())
            self.first_look(
                Job(
                    id=f"alert:{alert.delivery}",
                    thread=thread,
                    user=alert.source,
                    text=alert_first_look(redact_text(alert.title), redact_text(details)),
                    principal=Principal(platform="webhook", user=alert.source, team=self.team, channel=channel),
                    ts=root,
                )
            )

    def _run(self, alert: Alert, runbook: Runbook, trigger: Trigger, thread: ThreadRef, run_id: str) -> None:
        missing = sorted(label for label in trigger.params.values() if label not in alert.labels)
        if missing:
            # A default standing in for a label the alert lacks could point a run at the wrong service.
            self._say(
                thread,
                f"{run_id}:refused",
                f"Runbook `{runbook.id}` was not run: the alert has no label "
                f"{', '.join(repr(m) for m in missing)}, which its trigger maps to a parameter.",
            )
            return
        params = {param: alert.labels[label] for param, label in trigger.params.items()}
        origin = {**thread.place(), "alert": alert.key}
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

    def _resolved(self, alert: Alert) -> None:
        self.redis.set(f"{self.prefix}:resolved:{alert.key}", _episode(alert), ex=_THREAD_TTL_S)
        raw = self.redis.get(f"{self.prefix}:thread:{alert.key}")
        if not raw:
            log.info("resolved alert %r not seen firing yet; a late firing notification will run nothing", alert.title)
            return
        known = json.loads(raw)
        thread = ThreadRef(team=known["team"], channel=known["channel"], thread_ts=known["thread_ts"])
        note = f"✅ Resolved: {redact_text(alert.title)}."
        if known.get("run"):
            note += " What its runbook still waited for is cancelled."
            if not self.pool.submit(lambda: self._cancel(known["run"])):
                self._cancel(known["run"])
        self._say(thread, f"resolved:{alert.delivery}", note)
        replace(self.client, thread.channel, thread.thread_ts, escape(note), alert_blocks(alert, resolved=False))

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

    def _match(self, alert: Alert) -> tuple[Runbook, Trigger] | None:
        for runbook in sorted(self.policy.runbooks.values(), key=lambda r: r.id):
            for trigger in runbook.triggers:
                if trigger.matches(alert.source, alert.labels):
                    return runbook, trigger
        return None

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
                raw = self.queue.next(QUEUE_WAIT_S)
                unreachable = False
                if raw is None:
                    continue
                if self._stop.is_set():
                    self.queue.give_back(raw)  # taken while stopping: another process handles it
                    return
                self.handle(Alert.model_validate_json(raw))
                self.queue.done(raw)
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
