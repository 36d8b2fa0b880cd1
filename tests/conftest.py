from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore2
import pytest
from redis.backoff import NoBackoff

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory, Memory
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.redis import client as redis_client
from opsbot.bot.slack import alerts as slack_alerts
from opsbot.bot.slack import posting
from opsbot.config.settings import SAMPLE_CONFIG, LoopLimits, MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.clock import SkippingClock
from tests.fakes.model_server import ModelServer, Policy
from tests.fakes.prometheus_server import Running
from tests.fakes.prometheus_server import node_prometheus as prometheus_of_a_node
from tests.fakes.redis_server import ClusterSetup, RedisServer, SentinelSetup
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings


@pytest.fixture(scope="session", autouse=True)
def one_tls_context() -> Iterator[None]:
    """Every `openai` client loads the system's CA certificates into a TLS context of its own, 20
    to 30 ms each; the suite makes hundreds, which only ever speak plain HTTP to the fake model
    servers. They share one context, loaded once (contexts are made to be shared)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpcore2, "default_ssl_context", functools.cache(httpcore2.default_ssl_context))
        yield


@pytest.fixture(autouse=True)
def quick_posting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Posting that no test hands a pacing (the Slack stack's) looks for a lost post over a
    second or so, not the half minute production waits: the stack's client times out after 1 s
    (tests/fakes/slack_stack.py), and this leaves 0.2 s beyond it, looking every 20-100 ms."""
    monkeypatch.setattr(posting, "PACING", posting.Pacing(grace_s=0.2, first_pause_s=0.02, max_pause_s=0.1))


@pytest.fixture
def instant_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Posting's pauses and windows on a skipping clock, for tests whose failed posts fail at once
    and never land later: each failure still costs its looks, but not the 1.2 s each window waits."""
    clock = SkippingClock()
    pacing = posting.Pacing(grace_s=0.2, first_pause_s=0.02, max_pause_s=0.1, sleep=clock.sleep, clock=clock)
    monkeypatch.setattr(posting, "PACING", pacing)


@pytest.fixture
def quick_redis_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis clients made after this retry a failed connection as often as production's, with no
    pause between tries: for tests of an outage that lasts, where every try fails anyway."""
    monkeypatch.setattr(redis_client, "EqualJitterBackoff", lambda **_: NoBackoff())


@pytest.fixture(autouse=True)
def quick_alerts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Slack app a test builds is closed at its end, and closing waits for the alert worker's
    blocking wait on an empty queue: production's second would be most of a short test. A failed
    alert is tried again after 50 ms, not 2 s, so a test of retries waits for the retries alone."""
    monkeypatch.setattr(slack_alerts, "QUEUE_WAIT_S", 0.05)
    monkeypatch.setattr(slack_alerts, "RETRY_PAUSE_S", 0.05)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, which it may stop and start again."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterSetup]:
    """Three masters, shared by the tests that only read and write: flush it before use."""
    cluster = ClusterSetup(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def redis_sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelSetup]:
    """A master, a replica and a sentinel, shared like `redis_cluster`; a test failing a master over
    starts a setup of its own."""
    setup = SentinelSetup(tmp_path_factory.mktemp("sentinel"))
    setup.start()
    yield setup
    setup.stop()


@pytest.fixture(params=["inprocess", "redis"])
def memory(request: pytest.FixtureRequest) -> Memory:
    """Each test using this runs once per backend: the two must behave alike."""
    if request.param == "inprocess":
        return InProcessMemory()
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return RedisMemory(server.url)


@pytest.fixture(scope="module")
def node_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A real Prometheus of a real node_exporter and itself (tests/fakes/prometheus_server.py), per
    module; mark its tests `needs_node_exporter`."""
    with prometheus_of_a_node(tmp_path_factory.mktemp("prometheus")) as running:
        yield running


@pytest.fixture(scope="session")
def sample() -> Settings:
    return Settings.load(SAMPLE_CONFIG)


@pytest.fixture
def model_server() -> Iterator[Callable[[Policy], ModelServer]]:
    servers: list[ModelServer] = []

    def start(policy: Policy) -> ModelServer:
        server = ModelServer(policy).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__()


@pytest.fixture
def make_agent(memory: Memory, sample: Settings) -> Callable[..., Agent]:
    """An agent on the sample environment, talking to a scripted server through the real client."""

    def make(server: ModelServer, tools: list[Any] | None = None, max_retries: int = 0, **limits: Any) -> Agent:
        memory_settings = limits.pop("memory_settings", MemorySettings())
        client = ModelClient(model="scripted", base_url=server.base_url, max_retries=max_retries, timeout_s=5)
        return Agent(
            model=client,
            memory=memory,
            tools=tools if tools is not None else ops_tools(sample.policy),
            limits=LoopLimits(**{"tool_retry_backoff_s": 0.01, **limits}),
            memory_settings=memory_settings,
        )

    return make


SAMPLE_DIR: Path = SAMPLE_CONFIG.parent


@pytest.fixture
def sample_stack(
    redis_server: RedisServer, model_server: Callable[..., ModelServer], sample: Settings
) -> Iterator[Callable[[Any], Stack]]:
    """The Slack app in process (tests/fakes/slack_stack.py) on the sample policy and a scripted model."""
    stacks = Stacks()

    def make(model: Any) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        server = model_server(model)
        return stacks.start(slack, stack_settings(slack, redis_server.url, sample.policy, server), server)

    yield make
    stacks.close()
