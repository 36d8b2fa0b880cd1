"""Builds the Bolt app and everything it hands work to, and registers the listeners. Nothing else."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.error import URLError

from pydantic import SecretStr
from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.build import build_agent
from bot.loop import Agent
from bot.runbooks.engine import RunbookEngine
from bot.runbooks.explain import model_explainer
from bot.runbooks.store import RedisRunStore
from bot.slack.alerts import AlertRouter
from bot.slack.approvals import Approvals
from bot.slack.conversation import Conversation
from bot.slack.delivery import Dispatcher, WorkerPool
from bot.slack.intake import BotIdentity, Intake
from bot.slack.listeners import actions, commands, events
from bot.slack.principals import Directory
from bot.slack.runbook_runs import RunDecisions, ThreadReporter
from bot.slack.state import SlackState
from config.settings import Settings
from tools.runbooks import runbook_arg_problems

log = logging.getLogger("opsbot.slack")

# Listeners only queue work, so a few threads ack everything Slack sends.
_LISTENER_THREADS = 16


class StartupError(Exception):
    """opsbot cannot serve Slack as configured; the message names the variable to fix."""


@dataclass
class SlackApp:
    app: App
    dispatcher: Dispatcher
    pool: WorkerPool
    state: SlackState
    identity: BotIdentity
    engine: RunbookEngine
    alerts: AlertRouter
    reporter: ThreadReporter

    stopped: threading.Event = field(default_factory=threading.Event)

    def keep_recovering(self, every_s: float = 30.0) -> None:
        """Runs a stopped process left behind go on (or are marked interrupted) once their lease
        lapses: now, and every `every_s`, so a crash while others keep running is noticed too."""

        def loop() -> None:
            while True:
                try:
                    for run in self.engine.recover():
                        self.reporter.reshow(run)
                except Exception:
                    log.exception("runbook recovery failed; trying again later")
                if self.stopped.wait(every_s):
                    return

        threading.Thread(target=loop, name="opsbot-runbook-recovery", daemon=True).start()

    def close(self) -> None:
        self.stopped.set()
        self.alerts.stop()
        self.dispatcher.stop()
        self.pool.shutdown()


def web_client(settings: Settings) -> WebClient:
    token = _required(_secret(settings.slack_bot_token), "SLACK_BOT_TOKEN")
    # Only 429s are retried by the client (Slack did nothing): a lost response to a post is
    # retried by posting.py, which first looks whether the post arrived after all.
    return WebClient(
        token=token,
        base_url=settings.slack_api_url or WebClient.BASE_URL,
        timeout=15,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=5)],
    )


def build_slack_app(settings: Settings, http: bool, agent: Agent | None = None) -> SlackApp:
    """Raises `StartupError` for a missing or refused token, secret or Redis."""
    client = web_client(settings)
    signing_secret = _secret(settings.slack_signing_secret)
    if http:
        _required(signing_secret, "SLACK_SIGNING_SECRET")
    redis_url = _required(settings.redis_url, "REDIS_URL")
    identity = _identity(client)
    state = SlackState.from_url(redis_url, drain_ttl_s=settings.memory.lock_ttl_s)
    if not state.ping():
        raise StartupError(
            f"REDIS_URL: cannot reach Redis at {redis_url.split('@')[-1]}; Slack mode keeps its state there"
        )
    problems = runbook_arg_problems(settings.policy)
    if problems:
        raise StartupError("OPSBOT_CONFIG: runbook steps the tools would refuse:\n  " + "\n  ".join(problems))
    agent = agent or build_agent(settings)
    app = App(
        client=client,
        signing_secret=signing_secret,
        token_verification_enabled=False,
        request_verification_enabled=http,
        listener_executor=ThreadPoolExecutor(max_workers=_LISTENER_THREADS, thread_name_prefix="bolt-listener"),
    )
    pool = WorkerPool(settings.slack.workers, settings.slack.backlog)
    directory = Directory(client)
    teams = frozenset({identity.team_id}) | settings.slack.allowed_teams
    # An approval's outcome continues the conversation through the same queues as a message.
    approvals = Approvals(
        client,
        state,
        settings.policy,
        lambda job: dispatcher.submit(job),
        settings.slack.max_output_chars,
        teams=teams,
    )
    reporter = ThreadReporter(client, settings.slack.max_output_chars)
    engine = RunbookEngine(
        settings.policy,
        agent.executor,
        RedisRunStore(state.redis),
        reporter,
        model_explainer(agent.model) if agent.model is not None else None,
        lease_ttl_s=settings.runbooks.lease_ttl_s,
    )
    conversation = Conversation(agent, client, state, approvals, settings.slack, engine)
    dispatcher = Dispatcher(state, pool, handle=conversation.handle, refuse=conversation.refuse)
    alerts = AlertRouter(
        settings.policy,
        engine,
        client,
        state.redis,
        pool,
        settings.alerts,
        identity.team_id,
        (lambda job: dispatcher.submit(job, here_when_full=True)) if agent.model is not None else None,
        owner=engine.owner,
    )
    intake = Intake(
        agent, client, settings.policy, state, dispatcher, directory, identity, settings.slack, settings.memory.ttl_s
    )
    events.register(app, intake)
    commands.register(app, intake)
    actions.register(app, approvals, RunDecisions(engine, client, teams), pool, directory, state, settings.memory.ttl_s)
    dispatcher.start_janitor()
    alerts.start()
    slack_app = SlackApp(app, dispatcher, pool, state, identity, engine, alerts, reporter)
    slack_app.keep_recovering(settings.runbooks.recover_every_s)
    return slack_app


def _identity(client: WebClient) -> BotIdentity:
    try:
        response = client.auth_test()
    except SlackApiError as exc:
        raise StartupError(
            f"SLACK_BOT_TOKEN was refused by Slack ({exc.response.get('error')}); "
            "copy the Bot User OAuth Token from the app's OAuth & Permissions page"
        ) from exc
    except (URLError, OSError) as exc:
        raise StartupError(f"cannot reach the Slack API at {client.base_url} ({exc}); check SLACK_API_URL") from exc
    return BotIdentity(user_id=response["user_id"], bot_id=response.get("bot_id") or "", team_id=response["team_id"])


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _required(value: str | None, name: str) -> str:
    if not value:
        raise StartupError(f"{name} is not set; {_WHERE[name]}")
    return value


_WHERE = {
    "SLACK_BOT_TOKEN": "set it to the app's Bot User OAuth Token (xoxb-...), from OAuth & Permissions",
    "SLACK_APP_TOKEN": "set it to an app-level token (xapp-...) with connections:write, from Basic Information",
    "SLACK_SIGNING_SECRET": "HTTP mode verifies every request with it; copy it from the app's Basic Information",
    "REDIS_URL": "Slack mode keeps dedupe, queues and approvals in Redis, e.g. REDIS_URL=redis://localhost:6379/0",
}


def app_token(settings: Settings) -> str:
    return _required(_secret(settings.slack_app_token), "SLACK_APP_TOKEN")
