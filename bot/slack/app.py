"""Builds the Bolt app and everything it hands work to, and registers the listeners. Nothing else."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.error import URLError

from pydantic import SecretStr
from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from ...config.settings import Settings
from ...tools.catalog import runbook_arg_problems
from ..agent import Agent
from ..approvals import Approvals, HandBack, RedisApprovalStore
from ..build import build_agent
from ..llm import NOT_CONFIGURED, Fallbacks, Model, ModelClient, ModelHealth, ModelState, ModelWatch
from ..redis.client import REDIS_ERRORS, connect, describe
from ..runbooks import Recovery, RedisRunStore, RunbookEngine, model_explainer
from ..telemetry.audit import RedisAudit
from .alerts import AlertRouter
from .approval_requests import SlackRequests, ThreadContinuations
from .conversation import Conversation
from .delivery import Dispatcher, WorkerPool
from .feedback import AnswerFeedback
from .home import Contents, HomeTab
from .intake import BotIdentity, Intake
from .janitor import Janitor
from .journal import Journal
from .listeners import actions, commands, events
from .outbound import GuardedClient, Outbound
from .pacing import ChannelPacer, PacedClient, rate_limit_retries
from .principals import Directory
from .runbook_runs import ThreadReporter
from .sessions import RunBoard, Sessions, Stopper, StopWatch
from .state import SlackState

log = logging.getLogger("opsbot.slack")

# What a message parked while Redis was unreachable gets when its process stops before Redis returns.
PARKED_AT_EXIT = (
    "opsbot could not reach its Redis while you wrote this and is restarting, so nothing was run. "
    "Ask again in a minute."
)


class StartupError(Exception):
    """opsbot cannot serve Slack as configured; the message names the variable to fix."""


@dataclass(kw_only=True)
class SlackApp:
    app: App  # Bolt's, whose client its listeners are given
    client: GuardedClient  # opsbot's own posts: answers, alerts, runs
    dispatcher: Dispatcher
    pool: WorkerPool
    state: SlackState
    identity: BotIdentity
    engine: RunbookEngine
    alerts: AlertRouter
    reporter: ThreadReporter
    janitor: Janitor
    conversation: Conversation
    notices: ThreadPoolExecutor

    recovery: Recovery
    model: ModelWatch
    stops: StopWatch
    stopper: Stopper

    def health(self) -> dict[str, object]:
        """What /healthz says: whether Redis answers, and whether it keeps opsbot's jobs over a
        restart; whether the model can be used. `ok` (the status: 503 when false) is Redis's alone:
        without Redis nothing works, while without the model direct commands, approvals and
        runbooks still do, and a process taken out of service or restarted would not mend a wrong
        model address either. The model's state is there to be read (and alerted on)."""
        kept = self.janitor.persistence
        return {
            "ok": self.state.ping(),
            "bot": self.identity.user_id,
            "redis_persistence": kept.describe(),
            "redis_keeps_data": kept.keeps_data,
            "redis_restarts_seen": self.janitor.restarts,
            "held_here": len(self.dispatcher.journal.entries(parked=True)),
            "model": self.model.current().public(),
        }

    def close(self) -> None:
        """Stop taking work, let runs finish their current job, hand parked messages to Redis if
        it answers again, and tell the people whose messages cannot be handed over."""
        self.recovery.stop()
        self.stops.close()
        self.janitor.stop()
        self.alerts.stop()
        self.dispatcher.stop()
        self.pool.shutdown()
        try:
            self.dispatcher.queue_parked()
        except REDIS_ERRORS:
            pass
        for entry in self.dispatcher.journal.entries(parked=True):
            # One Slack was told nothing about comes again, to another process: refusing it here
            # would be its first of two answers.
            if entry.acked and not entry.require_active:
                self.conversation.refuse(entry.job, PARKED_AT_EXIT)
        self.notices.shutdown(wait=True)


def configure_client(client: WebClient, settings: Settings) -> WebClient:
    """The Web API client as opsbot uses it: Slack's URL (a fake one in tests), a timeout, and only
    429s retried by the client (Slack did nothing then): a lost response to a post is retried by
    posting.py, which first looks whether the post arrived after all. A paced client waits out
    the 429s of its posts in its pacer (bot/slack/pacing.py), the others in the retry handler."""
    url = settings.slack_api_url or WebClient.BASE_URL
    client.base_url = url if url.endswith("/") else url + "/"
    client.timeout = 15
    paced = isinstance(client, PacedClient)
    client.retry_handlers = [rate_limit_retries() if paced else RateLimitErrorRetryHandler(max_retry_count=5)]
    return client


def build_slack_app(settings: Settings, http: bool, agent: Agent | None = None) -> SlackApp:
    """Raises `StartupError` for a missing or refused token, secret or Redis."""
    token = _required(_secret(settings.slack_bot_token), "SLACK_BOT_TOKEN")
    signing_secret = _secret(settings.slack_signing_secret)
    if http:
        _required(signing_secret, "SLACK_SIGNING_SECRET")
    redis_url = _required(settings.redis_url, "REDIS_URL")
    # Listeners run before the ack (HTTP response or Socket Mode envelope ack): they only queue
    # the job in Redis, so Slack is acked once the job is durable, and a 503 when it cannot be.
    # Bolt makes the client from the token, as it expects (given a client of ours as well, it
    # would take SLACK_BOT_TOKEN from the environment and warn that it goes unused).
    app = App(
        # Named, or Bolt names it by inspecting the whole call stack (tens of ms per app). Not
        # "opsbot": Bolt configures the logger of that name, which would be opsbot's own.
        name="opsbot-slack",
        token=token,
        signing_secret=signing_secret,
        token_verification_enabled=False,
        request_verification_enabled=http,
        process_before_response=True,
    )
    configure_client(app.client, settings)  # Bolt's own, and the one its listeners are given
    # opsbot's own posts (answers, alerts, runs) go through a client that guards what they say
    # (bot/slack/outbound.py) and paces them per channel. Bolt's client only acks and reads.
    client = GuardedClient(token=token)
    configure_client(client, settings)
    client.outbound = Outbound(settings.slack.link_domains)
    identity = _identity(client)
    state = _state(redis_url, settings.slack.drain_lease_s)
    if settings.slack.post_interval_s > 0:
        client.pacer = ChannelPacer(state.redis, state.prefix, settings.slack.post_interval_s)
    problems = runbook_arg_problems(settings.policy)
    if problems:
        raise StartupError("OPSBOT_CONFIG: runbook steps the tools would refuse:\n  " + "\n  ".join(problems))
    agent = agent or build_agent(settings)
    pool = WorkerPool(settings.slack.workers, settings.slack.backlog)
    directory = Directory(client)
    teams = frozenset({identity.team_id}) | settings.slack.allowed_teams
    approvals = Approvals(settings.policy, RedisApprovalStore(state.redis), teams=teams, audit=agent.audit)
    requests = SlackRequests(client, approvals, settings.slack.max_output_chars)
    reporter = ThreadReporter(
        client,
        requests,
        approvals=approvals,
        max_output_chars=settings.slack.max_output_chars,
        recollection=agent.recollection,
    )
    engine = RunbookEngine(
        settings.policy,
        agent.executor,
        store=RedisRunStore(state.redis),
        reporter=reporter,
        approvals=approvals,
        explainer=model_explainer(agent.model) if agent.model is not None else None,
        lease_ttl_s=settings.runbooks.lease_ttl_s,
        audit=agent.audit,
    )
    # An approval's outcome goes on through the same queues as a message, or in its run.
    approvals.hand_back(HandBack.agent, ThreadContinuations(lambda job: dispatcher.submit(job)))
    approvals.hand_back(HandBack.runbook, engine)
    feedback = AnswerFeedback(state, agent.audit, settings.memory.ttl_s)
    sessions = Sessions(client, state.redis, state.prefix)
    stops = StopWatch(RunBoard(state.redis, state.prefix))
    notices = ThreadPoolExecutor(max_workers=2, thread_name_prefix="opsbot-notice")
    stopper = Stopper(
        stops.board, stops, requests=requests, sessions=sessions, teams=teams, later=notices.submit, audit=agent.audit
    )
    conversation = Conversation(
        agent,
        client,
        approvals=approvals,
        requests=requests,
        settings=settings.slack,
        engine=engine,
        directory=directory,
        requeue=lambda job: dispatcher.accept(job, "command", active_ttl_s=settings.memory.ttl_s),
        outbound=client.outbound,
        feedback=feedback,
        sessions=sessions,
        watch=stops,
    )
    dispatcher = Dispatcher(
        state,
        pool,
        handle=conversation.handle,
        journal=Journal(),
        dedupe_ttl_s=settings.slack.dedupe_ttl_s,
        on_takeover=agent.memory.break_lock,
    )
    janitor = Janitor(dispatcher, tick_s=min(1.0, settings.slack.drain_lease_s / 3))
    janitor.look()
    alerts = AlertRouter(
        settings.policy,
        engine,
        client=client,
        store=state.redis,
        pool=pool,
        settings=settings.alerts,
        team=identity.team_id,
        first_look=(lambda job: dispatcher.submit(job, here_when_full=True)) if agent.model is not None else None,
        owner=engine.owner,
        metrics=agent.executor,
        audit=agent.audit,
        recollection=agent.recollection,
    )
    intake = Intake(
        agent.memory,
        dispatcher,
        identity=identity,
        settings=settings.slack,
        thread_ttl_s=settings.memory.ttl_s,
        policy=settings.policy,
        can_ask=agent.model is not None,
        stopper=stopper,
        sessions=sessions,
        later=notices.submit,
    )
    model = watch_model(agent.model)
    home = HomeTab(
        client,
        contents=Contents(
            policy=settings.policy,
            approvals=approvals,
            trail=RedisAudit(state.redis, settings.audit.ttl_s),  # the agent's trail, read on Slack's Redis
            model=model.current,
            redis=state.ping,
        ),
        requests=requests,
        directory=directory,
        policy=settings.policy,
        questions=settings.slack.common_questions,
        can_ask=agent.model is not None,
        teams=teams,
    )
    events.register_home(app, home, later=notices.submit)  # before `register`: its catch-all matches anything
    events.register_stops(app, stopper)  # before `register`'s catch-all, which would take the event
    events.register(app, intake)
    commands.register(app, intake, client.outbound)
    actions.register(
        app,
        requests,
        pool,
        directory,
        feedback,
        client.outbound,
        later=notices.submit,
        home=home,
    )
    actions.register_stop(app, stopper)
    janitor.start()
    stops.start()
    alerts.start()
    recovery = Recovery(engine, reporter.reshow, settings.runbooks.recover_every_s)
    recovery.start()
    return SlackApp(
        app=app,
        client=client,
        dispatcher=dispatcher,
        pool=pool,
        state=state,
        identity=identity,
        engine=engine,
        alerts=alerts,
        reporter=reporter,
        janitor=janitor,
        conversation=conversation,
        notices=notices,
        recovery=recovery,
        model=model,
        stops=stops,
        stopper=stopper,
    )


def watch_model(model: Model | None) -> ModelWatch:
    """The model's health for the log and /healthz: nothing to ask without one, and nothing to ask
    of a stand-in that is no HTTP client (the Python API's, tests')."""
    if model is None:
        return ModelWatch(lambda: NOT_CONFIGURED)
    if isinstance(model, ModelClient | Fallbacks):
        return ModelWatch(model.check)
    unchecked = ModelHealth(state=ModelState.unverified, said="the model is not an HTTP client opsbot can check")
    return ModelWatch(lambda: unchecked)


def _state(redis_url: str, lease_s: float) -> SlackState:
    unreachable = f"REDIS_URL: cannot reach {describe(redis_url)}; Slack mode keeps its state there"
    try:
        # The ack path's one call gets a client of its own: acks never wait for a worker's connection.
        state = SlackState(connect(redis_url), lease_s=lease_s, intake=connect(redis_url))
    except REDIS_ERRORS as exc:  # a Cluster client reads the slot map as it is made
        raise StartupError(f"{unreachable} ({exc})") from exc
    if not state.ping():
        raise StartupError(unreachable)
    return state


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
