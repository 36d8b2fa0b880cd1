"""Alerts into Slack: the alert posted in its channel, the matching runbook run in its thread.

The webhook only queues (bot/alerts/queue.py, in Redis, so it answers at once and an accepted
alert survives a restart); workers here take alerts off the queue. Handling an alert twice is harmless: the
run id comes from the delivery (one run, whoever starts it) and every post is marked, so a
worker that died mid-alert is simply followed by one that does it again.

Alert text is untrusted: labels fill runbook parameters only through a trigger's mapping and the
parameters' types; annotations are shown (escaped) and given to the model as delimited data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable

import redis
from slack_sdk import WebClient

from bot.alerts.models import Alert
from bot.alerts.queue import AlertQueue
from bot.prompts import alert_first_look
from bot.runbooks.engine import RunbookEngine, RunRefused
from bot.slack.blocks import Block, escape, section
from bot.slack.jobs import Job, ThreadRef
from bot.slack.posting import PostFailed, post_once
from config.policy import Policy
from config.policy_base import Principal
from config.policy_runbooks import Runbook, Trigger
from config.settings import AlertSettings
from tools.redact import redact_text

log = logging.getLogger("opsbot.alerts")

_THREAD_TTL_S = 7 * 24 * 3600
# How long a worker may take over one alert before another may try again (runs wait for people
# without holding it: a run waiting for approval has left `handle` long before).
_CLAIM_TTL_S = 300


class AlertRouter:
    def __init__(
        self,
        policy: Policy,
        engine: RunbookEngine,
        client: WebClient,
        store: redis.Redis,
        settings: AlertSettings,
        team: str,
        first_look: Callable[[Job], None] | None,
        prefix: str = "opsbot:alerts",
    ) -> None:
        self.policy = policy
        self.engine = engine
        self.client = client
        self.redis = store
        self.settings = settings
        self.team = team
        self.first_look = first_look
        self.prefix = prefix
        self.queue = AlertQueue(store, prefix)
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []

    def start(self, workers: int = 2) -> None:
        # What a dead process was handling is handled again; see the module docstring for why that is safe.
        self.queue.requeue_unfinished()
        for n in range(workers):
            worker = threading.Thread(target=self._work, name=f"opsbot-alerts-{n}", daemon=True)
            worker.start()
            self._workers.append(worker)

    def stop(self) -> None:
        """Stop taking alerts; one being handled is finished first."""
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=10)

    def handle(self, alert: Alert) -> None:
        """Handle an alert once: a claim in Redis keeps two workers (or processes) apart; after a
        crash the claim lapses and the alert is handled again, finding what was already posted."""
        claim = f"{self.prefix}:handled:{alert.delivery}"
        if not self.redis.set(claim, "working", nx=True, ex=_CLAIM_TTL_S):
            log.info("alert %r is handled elsewhere", alert.title)
            return
        self._handle(alert)
        self.redis.set(claim, "done", ex=_THREAD_TTL_S)

    def _handle(self, alert: Alert) -> None:
        if alert.status == "resolved":
            self._resolved(alert)
            return
        match = self._match(alert)
        channel = (match[1].channel if match else None) or self.settings.channel
        if channel is None:
            log.error("alert %r has no channel: set alerts.channel or a trigger's channel", alert.title)
            return
        root = post_once(
            self.client,
            channel,
            None,
            f"alert:{alert.delivery}",
            f"🚨 {escape(alert.title)}",
            _alert_blocks(alert),
            kind="opsbot_alert",
            check_first=True,
        )
        thread = ThreadRef(team=self.team, channel=channel, thread_ts=root)
        run_id = "alert-" + hashlib.sha256(alert.delivery.encode()).hexdigest()[:24]
        remembered = {"team": thread.team, "channel": channel, "thread_ts": root, "run": run_id if match else ""}
        self.redis.set(f"{self.prefix}:thread:{alert.key}", json.dumps(remembered), ex=_THREAD_TTL_S)
        if match is not None:
            self._run(alert, match[0], match[1], thread, run_id)
        elif self.settings.first_look and self.first_look is not None:
            details = "\n".join(f"{k}: {v}" for k, v in {**alert.labels, **alert.annotations}.items())
            self.first_look(
                Job(
                    id=f"alert:{alert.delivery}",
                    thread=thread,
                    user=alert.source,
                    text=alert_first_look(alert.title, redact_text(details)),
                    principal=Principal(platform="webhook", user=alert.source, team=self.team, channel=channel),
                    ts=root,
                )
            )

    def _run(self, alert: Alert, runbook: Runbook, trigger: Trigger, thread: ThreadRef, run_id: str) -> None:
        params = {param: alert.labels[label] for param, label in trigger.params.items() if label in alert.labels}
        origin = {"team": thread.team, "channel": thread.channel, "thread_ts": thread.thread_ts, "alert": alert.key}
        try:
            self.engine.start(
                runbook.id,
                params,
                origin,
                run_id=run_id,
                requested_by=Principal(platform="webhook", user=alert.source, team=self.team),
            )
        except RunRefused as exc:
            self._say(thread, f"{run_id}:refused", f"Runbook `{runbook.id}` was not run: {exc}")

    def _resolved(self, alert: Alert) -> None:
        raw = self.redis.get(f"{self.prefix}:thread:{alert.key}")
        if not raw:
            log.info("resolved alert %r was never seen firing here; nothing to update", alert.title)
            return
        known = json.loads(raw)
        thread = ThreadRef(team=known["team"], channel=known["channel"], thread_ts=known["thread_ts"])
        if known.get("run"):
            self.engine.cancel(known["run"], "the alert resolved")
        self._say(
            thread,
            f"resolved:{alert.delivery}",
            f"✅ Resolved: {alert.title}. Pending approvals of this alert are cancelled.",
        )

    def _match(self, alert: Alert) -> tuple[Runbook, Trigger] | None:
        for runbook in sorted(self.policy.runbooks.values(), key=lambda r: r.id):
            for trigger in runbook.triggers:
                if trigger.matches(alert.source, alert.labels):
                    return runbook, trigger
        return None

    def _say(self, thread: ThreadRef, marker: str, text: str) -> None:
        try:
            post_once(self.client, thread.channel, thread.thread_ts, marker, escape(text), kind="opsbot_alert_note")
        except PostFailed as exc:
            log.error("could not post to alert thread %s: %s", thread.key, exc.error)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                raw = self.queue.next()
            except redis.RedisError as exc:
                log.warning("alert queue unreachable (%s); retrying", exc)
                self._stop.wait(2)
                continue
            if raw is None:
                continue
            if self._stop.is_set():
                self.queue.give_back(raw)  # taken while stopping: another process handles it
                return
            try:
                self.handle(Alert.model_validate_json(raw))
            except Exception:
                log.exception("alert handling failed; it is handled again when a process starts")
                continue
            self.queue.done(raw)


def _alert_blocks(alert: Alert) -> list[Block]:
    labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
    lines = [f"🚨 *{escape(alert.title)}* ({alert.source}, {alert.status})", f"*Labels:* {escape(labels)}"]
    lines += [f"*{escape(k)}:* {escape(v)}" for k, v in sorted(alert.annotations.items())]
    if alert.url:
        lines.append(f"<{alert.url}|Open in {alert.source}>")
    if alert.notes:
        lines.append(f"_{escape('; '.join(alert.notes))}_")
    return [section("\n".join(lines))]
