"""`opsbot eval`: each scenario, each run, through opsbot's loop and the bare loop, on the
configured model, each in a fresh fixture directory and a fresh thread."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...config.settings import Settings
from ...tools.redact import redact_text
from ..agent import Agent, Recollection
from ..build import build_client
from ..incidents import Recalled
from ..memory import InProcessMemory
from ..version import VERSION
from .bare import BareLoop
from .fixture import build
from .judge import judge
from .past import recollection
from .report import LOOPS, summarize
from .results import CallSeen, EvalReport, Loop, Recall, ScenarioRun, Transcript
from .suite import Scenario, Suite
from .watch import Watch


def evaluate(
    settings: Settings, suite: Suite, runs: int, done: Callable[[ScenarioRun], None] = lambda run: None
) -> EvalReport:
    now = datetime.now(UTC)
    results: list[ScenarioRun] = []
    for scenario in suite.scenarios:
        for run in range(1, runs + 1):
            for loop in LOOPS:
                results.append(_one(settings, scenario, loop, run, now))
                done(results[-1])
    return EvalReport(
        opsbot=VERSION,
        model=settings.model,
        endpoint=redact_text(settings.openai_base_url or "https://api.openai.com/v1"),
        suite=suite.name,
        runs=runs,
        scenarios=[s.id for s in suite.scenarios],
        summary={loop: summarize([r for r in results if r.loop == loop], runs) for loop in LOOPS},
        results=results,
    )


def _one(settings: Settings, scenario: Scenario, loop: Loop, run: int, now: datetime) -> ScenarioRun:
    with tempfile.TemporaryDirectory(prefix="opsbot-eval-") as root:
        policy = build(scenario, Path(root), now)
        watch = Watch(policy, scenario.faults)
        questions = [*scenario.history, scenario.question]
        if loop == "opsbot":
            transcript = _opsbot(settings, watch, questions, recollection(scenario.past, policy, now))
        else:
            transcript = _bare(settings, watch, questions)
    return judge(scenario, loop, run, transcript, watch)


def _opsbot(settings: Settings, watch: Watch, questions: list[str], memory: Recollection | None) -> Transcript:
    agent = Agent(
        model=build_client(settings),
        memory=InProcessMemory(),
        tools=watch.registry,
        limits=settings.loop,
        memory_settings=settings.memory,
        recollection=memory,
    )
    out = Transcript(answer="", stop_reason="")
    for question in questions:
        reply = agent.run(question, thread="eval")
        out.answer, out.stop_reason, out.evidence = reply.text, reply.stop_reason.value, reply.evidence
        out.model_calls += reply.usage.model_calls
        out.prompt_tokens += reply.usage.prompt_tokens
        out.completion_tokens += reply.usage.completion_tokens
        out.wall_s += reply.duration_s
        out.calls += [CallSeen(tool=c.tool, args=c.args, status=c.status) for s in reply.steps for c in s.calls]
        out.recalled = _recalled(reply.recalled) if memory is not None else None
    return out


def _recalled(recalled: Recalled | None) -> Recall | None:
    if recalled is None or not recalled.matches:
        return "nothing"
    return "abstained" if recalled.abstained else "given"


def _bare(settings: Settings, watch: Watch, questions: list[str]) -> Transcript:
    import openai

    client: Any = openai.OpenAI(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.llm.timeout_s,
        max_retries=settings.llm.max_retries,
    )
    request = {"temperature": settings.llm.temperature, "max_tokens": settings.llm.max_answer_tokens}
    bare = BareLoop(client, settings.model, registry=watch.registry, max_steps=settings.loop.max_steps, request=request)
    out = Transcript(answer="", stop_reason="")
    for question in questions:
        bare.ask(question, out)
    return out
