"""Property: whatever the model does, the loop ends, answers once, and never sends an orphan."""

from __future__ import annotations

import itertools
import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import Memory
from opsbot.config.settings import LoopLimits, MemorySettings
from opsbot.tools.catalog import ops_tools
from tests.fakes.checks import assert_well_paired
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request

SERVICES = ["checkout", "payments", "auth", "nope"]

behaviour = st.one_of(
    st.just(("answer",)),
    st.just(("empty",)),
    st.just(("error",)),
    st.tuples(st.just("logs"), st.sampled_from(SERVICES), st.integers(1, 300)),
    st.just(("unknown_tool",)),
    st.just(("bad_json",)),
    st.just(("repeat",)),
    st.tuples(st.just("many"), st.lists(st.sampled_from(SERVICES), min_size=2, max_size=4)),
)


class Scripted:
    """Plays a drawn list of behaviours, one per request; `answer` once the list is spent."""

    def __init__(self) -> None:
        self.plan: list[tuple] = []
        self.last: Reply | None = None
        self.lock = threading.Lock()
        self.ids = itertools.count()

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            if is_summary_request(body):
                return Reply(content="- earlier: logs were read")
            step = self.plan.pop(0) if self.plan else ("answer",)
            reply = self._reply(step)
            if reply.calls:
                self.last = reply
            return reply

    def _reply(self, step: tuple) -> Reply:
        kind = step[0]
        if kind == "answer":
            return Reply(content="here is what I found")
        if kind == "empty":
            return Reply(content="")
        if kind == "error":
            return Reply(status=503)
        if kind == "logs":
            return Reply(calls=[self._logs(step[1], step[2])])
        if kind == "unknown_tool":
            return Reply(calls=[Call("rm_rf", {"path": "/"}, id=self._id())])
        if kind == "bad_json":
            return Reply(calls=[Call("query_logs", '{"service": "auth", "lim', id=self._id())])
        if kind == "repeat" and self.last is not None:
            return Reply(calls=[Call(c.name, c.arguments, id=self._id()) for c in self.last.calls])
        if kind == "many":
            return Reply(calls=[self._logs(service, 5) for service in step[1]])
        return Reply(content="nothing to repeat")

    def _id(self) -> str:
        return f"call_{next(self.ids)}"

    def _logs(self, service: str, limit: int) -> Call:
        return Call("query_logs", {"service": service, "limit": limit}, id=self._id())


@pytest.fixture(scope="module")
def model_server_session():
    scripted = Scripted()
    with ModelServer(scripted) as server:
        yield scripted, server


@pytest.fixture
def agent_for(sample):
    def make(server: ModelServer, memory: Memory) -> Agent:
        return Agent(
            model=ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5),
            memory=memory,
            tools=ops_tools(sample.policy),
            limits=LoopLimits(max_steps=6, tool_retry_backoff_s=0.0, max_result_tokens=200),
            memory_settings=MemorySettings(window_tokens=600, summary_tokens=60),
        )

    return make


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.lists(behaviour, max_size=14), min_size=1, max_size=3))
def test_random_model_behaviour_never_breaks_the_loop(turns, model_server_session, agent_for, memory: Memory):
    scripted, server = model_server_session
    agent = agent_for(server, memory)
    thread = f"prop:{uuid.uuid4().hex}"
    for plan in turns:
        scripted.plan = list(plan)
        before = len(server.requests)
        reply = agent.run("what is going on?", thread=thread)
        sent = server.requests[before:]
        assert reply.text.strip(), "every run ends in a reply with words"
        model_calls = [b for b in sent if not is_summary_request(b)]
        assert len(model_calls) <= agent.limits.max_steps + 1, "bounded: max_steps plus one empty-nudge"
        for body in sent:
            assert_well_paired(body)
    state = memory.load(thread, new_turn=False)
    if state.blocks:
        assert state.blocks[0].starts_turn
