"""The agent loop: one user message in one thread becomes one `Reply`.

A plain `while` over steps. Each step asks the model once; tool calls are validated, run
(concurrently, bounded) and paired with their results by `tool_call_id`; the step is stored and
logged as one record. Every guard ends in a reply, never an exception.

Calls are capped: of one message's distinct calls the first `max_calls_per_step` run, and a run
runs at most `max_calls_per_run`; a call past either cap is answered `invalid_args` without
running, and a run that has spent its calls has its tools withdrawn (`max_calls`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bot.context import fit_prompt
from bot.guards import LoopGuard, Verdict, call_key, canonical_arguments
from bot.llm import ModelClient, ModelTurn, ModelUnavailable, Usage
from bot.memory import Memory, MemoryUnavailable, ThreadBusy, ThreadState
from bot.messages import Block, Message
from bot.prompts import (
    SYSTEM_PROMPT,
    busy_text,
    final_note,
    llm_unavailable_text,
    memory_unavailable_text,
    no_answer_text,
    no_model_text,
    nudge_drift,
    nudge_empty,
    over_run_cap,
    over_step_cap,
    unsaved_answer_note,
)
from bot.reply import CallRecord, Progress, Reply, Step, StopReason
from bot.summary import blocks_to_fold, write_summary
from bot.tokens import CHARS_PER_TOKEN
from config.policy_base import Principal
from config.settings import LoopLimits, MemorySettings
from tools.base import ErrorType, Registry, Tool, ToolResult
from tools.commands import ApprovalRequest
from tools.executor import Executor, Outcome, RetryPolicy, ToolCall
from tools.redact import redact, redact_text

log = logging.getLogger("opsbot.steps")


class Agent:
    def __init__(
        self,
        model: ModelClient | None,
        memory: Memory,
        tools: Registry | Iterable[Tool | Callable[..., Any]],
        limits: LoopLimits | None = None,
        memory_settings: MemorySettings | None = None,
        system_prompt: str = SYSTEM_PROMPT,
    ) -> None:
        self.model = model
        self.memory = memory
        self.registry = tools if isinstance(tools, Registry) else Registry(tools)
        self.limits = limits or LoopLimits()
        self.memory_settings = memory_settings or MemorySettings()
        self.system_prompt = system_prompt
        self.executor = Executor(
            self.registry,
            RetryPolicy(self.limits.tool_timeout_s, self.limits.tool_retries, self.limits.tool_retry_backoff_s),
            self.limits.max_parallel_tools,
        )

    def run(
        self,
        text: str,
        thread: str = "cli:default",
        progress: Progress | None = None,
        principal: Principal | None = None,
    ) -> Reply:
        """Answer `text` in `thread`. `principal` (who asks) is what tools authorize against."""
        run = _Run(self, thread, progress or Progress(), time.monotonic(), principal)
        _log("run_start", thread=thread, run=run.run_id, question=redact_text(text))
        if self.model is None:
            reply = run.reply(no_model_text(), StopReason.no_model)
        else:
            try:
                with self.memory.lock(thread, self.memory_settings.lock_ttl_s, self.memory_settings.lock_wait_s):
                    reply = run.execute(text)
            except ThreadBusy:
                reply = run.reply(busy_text(self.memory_settings.lock_ttl_s), StopReason.busy)
            except MemoryUnavailable as exc:
                reply = run.reply(memory_unavailable_text(exc), StopReason.memory_unavailable)
        _log(
            "run_end",
            thread=thread,
            run=run.run_id,
            stop_reason=reply.stop_reason.value,
            answer=reply.text,
            steps=len(reply.steps),
            duration_s=round(reply.duration_s, 3),
            **reply.usage.model_dump(),
        )
        return reply

    def reset(self, thread: str) -> None:
        """Forget a thread, waiting for a run in it to finish first. Raises `ThreadBusy`, `MemoryUnavailable`."""
        with self.memory.lock(thread, self.memory_settings.lock_ttl_s, self.memory_settings.lock_wait_s):
            self.memory.reset(thread)


@dataclass
class _Run:
    """The state of one run; lives only as long as `Agent.run`."""

    agent: Agent
    thread: str
    progress: Progress
    started: float
    principal: Principal | None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    notes: list[Message] = field(default_factory=list)  # loop nudges: sent, never stored
    approvals: list[ApprovalRequest] = field(default_factory=list)
    nudged_empty: bool = False
    drift_noted: bool = False

    def execute(self, text: str) -> Reply:
        agent, limits = self.agent, self.agent.limits
        state = agent.memory.load(self.thread, new_turn=True)
        # A secret pasted into a question is no more the model's business than one in a log line.
        user = Block(messages=[Message.user(redact_text(text))])
        agent.memory.append(self.thread, [user])
        turn_blocks: list[Block] = [user]
        guard = LoopGuard(limits, state.repeats)
        budget = _CallBudget(limits)
        stop: StopReason | None = None
        while True:
            if stop is None and len(self.steps) + 1 >= limits.max_steps:
                stop = StopReason.max_steps
            if stop is None and time.monotonic() - self.started >= limits.time_budget_s:
                stop = StopReason.time_budget
            try:
                turn = self._ask(state, turn_blocks, final=stop)
            except ModelUnavailable as exc:
                return self.reply(llm_unavailable_text(exc, self.steps), StopReason.llm_unavailable)
            if stop is None and turn.tool_calls:
                block, stop = self._tool_step(turn, guard, budget)
                turn_blocks.append(block)
                continue
            # Tool calls on a step without tools are not run; what came with them is only a preamble.
            answer = "" if turn.tool_calls else turn.content.strip()
            decision = "tool_calls_ignored" if turn.tool_calls else ("answer" if answer else "empty")
            if not answer and not self.nudged_empty:
                self.nudged_empty = True
                self.notes.append(nudge_empty())
                self._record(Step(n=len(self.steps) + 1, decision=decision, **_tokens(turn)), [])
                continue
            reason = stop or StopReason.answered
            if not answer:
                answer, reason = no_answer_text(self.steps), StopReason.no_answer
            self._record(Step(n=len(self.steps) + 1, decision=decision, **_tokens(turn)), [])
            return self._finish(state, turn_blocks, answer, reason)

    def _finish(self, state: ThreadState, turn_blocks: list[Block], answer: str, reason: StopReason) -> Reply:
        turn_blocks.append(Block(messages=[Message.assistant(answer)]))
        try:
            self.agent.memory.append(self.thread, turn_blocks[-1:])
        except MemoryUnavailable as exc:
            # The answer exists: give it, and say it may not be remembered.
            return self.reply(answer + unsaved_answer_note(exc), reason)
        try:
            self._fold(state, turn_blocks)
        except MemoryUnavailable as exc:
            # The answer is stored; the window stays over budget and is folded next turn.
            _log("fold_failed", thread=self.thread, run=self.run_id, error=str(exc))
        return self.reply(answer, reason)

    def _tool_step(self, turn: ModelTurn, guard: LoopGuard, budget: _CallBudget) -> tuple[Block, StopReason | None]:
        agent, step_n = self.agent, len(self.steps) + 1
        calls = [ToolCall(c.id, c.name, c.arguments) for c in turn.tool_calls]
        outcomes, refusal = self._outcomes(step_n, calls, guard, budget)
        assistant = Message.assistant(turn.content, list(turn.tool_calls))
        block = Block.tool_step(assistant, [Message.tool(o.call.id, o.result.render()) for o in outcomes])
        agent.memory.append(self.thread, [block], guard.changed())
        stop: StopReason | None = None
        note = None
        waiting = _approval_requests(outcomes)
        self.approvals.extend(waiting)
        if waiting:
            # The model answers once more, without tools: a person decides before anything else runs.
            stop, note = StopReason.needs_approval, f"{len(waiting)} command(s) wait for approval: tools withdrawn"
        elif guard.stop_requested:
            stop, note = StopReason.repeated_call, "an identical call was repeated again: stopping"
        elif budget.spent:
            stop, note = StopReason.max_calls, f"max_calls_per_run ({budget.per_run}) reached: tools withdrawn"
        elif (drift := guard.drift(calls)) is not None:
            if self.drift_noted:
                stop, note = StopReason.loop_detected, f"{drift}: tools withdrawn"
            else:
                self.drift_noted = True
                self.notes.append(nudge_drift(drift))
                note = f"{drift}: nudged"
        records = [_call_record(o) for o in outcomes]
        if refusal is not None:
            note = "; ".join(n for n in (refusal.note(outcomes), note) if n)
        self._record(Step(n=step_n, decision="tool_calls", calls=records, note=note, **_tokens(turn)), outcomes)
        return block, stop

    def _outcomes(
        self, step_n: int, calls: list[ToolCall], guard: LoopGuard, budget: _CallBudget
    ) -> tuple[list[Outcome], _Refusal | None]:
        """One outcome per call, in order, and what the budget refused, if anything.

        Identical calls in one message run once and share it; repeats of earlier calls are
        answered by the guard without running; calls past the budget are answered without running
        and are not recorded by the guard, so sending one again meets the budget again."""
        agent = self.agent
        first_of: dict[str, ToolCall] = {}
        checks = {}
        for call in calls:
            key = call_key(call)
            if key not in first_of:
                first_of[key] = call
                checks[key] = guard.check(call)
        wanted = [first_of[key] for key, check in checks.items() if check.verdict is Verdict.run]
        to_run, refusal = budget.admit(wanted)
        for call in to_run:
            self.progress.on_tool_start(step_n, call.name, _shown_args(call.arguments))
        results = {}
        for outcome in agent.executor.run_many(to_run, self.principal):
            capped = outcome.result.capped(agent.limits.max_result_tokens * CHARS_PER_TOKEN)
            guard.record(outcome.call, capped)
            results[call_key(outcome.call)] = Outcome(outcome.call, capped, outcome.attempts, outcome.duration_s)
        outcomes = []
        for call in calls:
            key = call_key(call)
            shared = results.get(key)
            if shared is not None:
                first = call is first_of[key]
                outcomes.append(
                    Outcome(call, shared.result, shared.attempts if first else 0, shared.duration_s if first else 0.0)
                )
            elif refusal is not None and key in refusal.keys:
                outcomes.append(Outcome(call, refusal.result, 0, 0.0))
            else:
                outcomes.append(Outcome(call, checks[key].result(), 0, 0.0))
        return outcomes, refusal

    def _ask(self, state: ThreadState, turn_blocks: list[Block], final: StopReason | None) -> ModelTurn:
        agent = self.agent
        self.progress.on_model_call(len(self.steps) + 1)
        head = [Message.system(agent.system_prompt)]
        if state.summary:
            head.append(Message.system(f"Summary of earlier turns in this thread:\n{state.summary}"))
        tail = [*self.notes, *([final_note(final, agent.limits)] if final is not None else [])]
        messages = fit_prompt(head, state.blocks, turn_blocks, tail, agent.limits.max_prompt_tokens)
        assert agent.model is not None
        turn = agent.model.complete(
            [m.to_api() for m in messages], tools=None if final is not None else agent.registry.schemas()
        )
        self.usage.add(turn.usage)
        return turn

    def _fold(self, state: ThreadState, turn_blocks: list[Block]) -> None:
        settings = self.agent.memory_settings
        blocks = [*state.blocks, *turn_blocks]
        count = blocks_to_fold(blocks, settings.window_tokens)
        if count == 0:
            return
        summary, usage = write_summary(
            self.agent.model, state.summary, blocks[:count], settings.summary_tokens, settings.window_tokens * 2
        )
        self.usage.add(usage)
        self.agent.memory.fold(self.thread, state.skipped + count, summary)

    def _record(self, step: Step, outcomes: list[Outcome]) -> None:
        self.steps.append(step)
        _log(
            "step",
            thread=self.thread,
            run=self.run_id,
            step=step.n,
            decision=step.decision,
            calls=[c.model_dump(mode="json") for c in step.calls],
            results=[o.result.render() for o in outcomes],
            note=step.note,
            prompt_tokens=step.prompt_tokens,
            completion_tokens=step.completion_tokens,
            model_ms=step.model_ms,
        )
        self.progress.on_step(step)

    def reply(self, text: str, reason: StopReason) -> Reply:
        return Reply(
            thread=self.thread,
            text=redact_text(text),
            stop_reason=reason,
            steps=self.steps,
            usage=self.usage,
            duration_s=time.monotonic() - self.started,
            approvals=self.approvals,
        )


@dataclass(frozen=True)
class _Refusal:
    """The calls past a cap (by `call_key`), what they are told, and which cap it was."""

    keys: frozenset[str]
    result: ToolResult
    setting: str
    cap: int

    def note(self, outcomes: list[Outcome]) -> str:
        """For people; counted per tool_call_id, as the step lists them, duplicates included."""
        refused = sum(1 for outcome in outcomes if call_key(outcome.call) in self.keys)
        return f"{refused} call(s) not run: over {self.setting} ({self.cap})"


@dataclass
class _CallBudget:
    """The tool calls a run may still run: `max_calls_per_step` per model message, and
    `max_calls_per_run` in all. Every call handed to the executor counts, bad arguments included;
    a repeat answered by the guard and a call refused here do not."""

    limits: LoopLimits
    ran: int = 0

    @property
    def per_run(self) -> int:
        return self.limits.max_calls_per_run

    @property
    def spent(self) -> bool:
        return self.ran >= self.per_run

    def admit(self, wanted: list[ToolCall]) -> tuple[list[ToolCall], _Refusal | None]:
        """The first of `wanted` (distinct calls, in the order the model sent them) that fit both
        caps, and what the rest are told (None when every call fits)."""
        # Never below zero: a negative slice would run all but the last calls.
        per_step, room = self.limits.max_calls_per_step, max(0, self.per_run - self.ran)
        allowed = min(per_step, room)
        admitted, rest = wanted[:allowed], frozenset(call_key(call) for call in wanted[allowed:])
        self.ran += len(admitted)
        if not rest:
            return admitted, None
        if room < per_step:
            return admitted, _Refusal(rest, over_run_cap(self.per_run), "max_calls_per_run", self.per_run)
        return admitted, _Refusal(rest, over_step_cap(len(wanted), per_step), "max_calls_per_step", per_step)


def _log(event: str, **fields: Any) -> None:
    """One JSON record per event: a thread can be replayed from its run_start, steps and run_end."""
    log.info(json.dumps({"event": event, **fields}, ensure_ascii=False, default=str))


def _tokens(turn: ModelTurn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.usage.prompt_tokens,
        "completion_tokens": turn.usage.completion_tokens,
        "model_ms": round(turn.duration_s * 1000, 1),
    }


def _shown_args(raw: str) -> Any:
    _, parsed = canonical_arguments(raw)
    return redact(parsed if parsed is not None else raw)


def _approval_requests(outcomes: list[Outcome]) -> list[ApprovalRequest]:
    """The approval requests among `outcomes`, each once (identical calls share one request)."""
    requests: dict[str, ApprovalRequest] = {}
    for outcome in outcomes:
        error = outcome.result.error
        if error is not None and error.type is ErrorType.needs_approval:
            request = ApprovalRequest.model_validate(outcome.result.data)
            requests.setdefault(request.id, request)
    return list(requests.values())


def _call_record(outcome: Outcome) -> CallRecord:
    error = outcome.result.error
    return CallRecord(
        id=outcome.call.id,
        tool=outcome.call.name,
        args=_shown_args(outcome.call.arguments),
        status=outcome.result.status,
        error=error.message if error else None,
        attempts=outcome.attempts,
        duration_ms=round(outcome.duration_s * 1000, 1),
    )
