"""The agent loop: one user message in one thread becomes one `Reply`.

A plain loop over steps, each of which says what comes next: the model asked again, or the run
finished with its reply. Each step asks the model once; tool calls are validated, run
(concurrently, bounded) and paired with their results by `tool_call_id`; the step is stored and
logged as one record. Every guard ends in a reply, never an exception.

Calls are capped: of one message's distinct calls the first `max_calls_per_step` run, and a run
runs at most `max_calls_per_run`; a call past either cap is answered `invalid_args` without
running, and a run that has spent its calls has its tools withdrawn (`max_calls`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, NamedTuple

from ...config.policy import Principal
from ...config.settings import LoopLimits, MemorySettings
from ...tools.base import ErrorType, Registry, Tool, brief
from ...tools.cancel import Cancelled, abandonable, cancellable, requested
from ...tools.commands import ApprovalRequest
from ...tools.executor import Outcome, RetryPolicy, ToolCall
from ...tools.redact import redact, redact_text
from ..charts import charts_of
from ..faults import Fault
from ..incidents import Recalled
from ..llm import Model, ModelTurn, ModelUnavailable, Usage, unique_ids
from ..memory import Memory, MemoryUnavailable, ThreadBusy, ThreadState
from ..messages import Block, Message
from ..telemetry import metrics, tracing
from ..telemetry.audit import Audit, LoggedAudit, run_finished
from ..telemetry.calls import TracedExecutor, audited
from .answer_stream import AnswerLines
from .budget import CallBudget, Refusal
from .context import fit_prompt
from .evidence import STEP_FIELD_CHARS, Evidence, Ran, Source, check_answer, not_looked_at, numbered, result_source
from .findings import findings_text
from .guards import LoopGuard, Verdict, call_key, canonical_arguments
from .prompts import (
    CANCELLED_NOTE,
    CUT_ANSWER,
    NO_MODEL_FAULT,
    SYSTEM_PROMPT,
    UNSAVED_ANSWER,
    busy_text,
    cancelled_text,
    continue_note,
    cut_call,
    ended_text,
    final_note,
    llm_unavailable_text,
    memory_unavailable_text,
    no_model_text,
    nudge_drift,
    nudge_empty,
    refused_text,
    stopped_text,
)
from .recalled import seen_before_note
from .recollection import Recollection
from .reply import CallRecord, Progress, Reply, Step, StepDecision, StopReason
from .summary import blocks_to_fold, write_summary
from .tokens import CHARS_PER_TOKEN, message_tokens

log = logging.getLogger("opsbot.steps")
REASONING_LOG_CHARS = 4_000


class Agent:
    def __init__(
        self,
        model: Model | None,
        memory: Memory,
        *,
        tools: Registry | Iterable[Tool[Any] | Callable[..., Any]],
        limits: LoopLimits | None = None,
        memory_settings: MemorySettings | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        audit: Audit | None = None,
        recollection: Recollection | None = None,
        subjects: Iterable[str] = (),
    ) -> None:
        self.model = model
        self.recollection = recollection
        # What a question may name that the tools can look at (the policy's services and config
        # roots): named but never asked about, it is "not looked at" in the reply.
        self.subjects = tuple(subjects)
        self.audit = audit or LoggedAudit()
        self.memory = memory
        self.registry = tools if isinstance(tools, Registry) else Registry(tools)
        self.limits = limits or LoopLimits()
        self.memory_settings = memory_settings or MemorySettings()
        self.system_prompt = system_prompt
        self.executor = TracedExecutor(
            self.registry,
            RetryPolicy(self.limits.tool_timeout_s, self.limits.tool_retries, self.limits.tool_retry_backoff_s),
            self.limits.max_parallel_tools,
        )

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools as the model is told them, made once, when first needed: an MCP server's are
        listed by the server, which starts then (a direct command never asks for them)."""
        return self.registry.schemas()

    def run(
        self,
        text: str,
        thread: str = "cli:default",
        progress: Progress | None = None,
        principal: Principal | None = None,
        cancel: threading.Event | None = None,
    ) -> Reply:
        """Answer `text` in `thread`. `principal` (who asks) is what tools authorize against.
        Setting `cancel` gives the question up: the model's reply stops being read, a running
        tool's process is killed, and the run ends `cancelled` with the thread's memory whole."""
        run = _Run(self, thread, progress=progress or Progress(), started=time.monotonic(), principal=principal)
        with cancellable(cancel), tracing.span("opsbot.run", run_id=run.run_id, thread=thread) as span:
            if _logging():
                _log("run_start", thread=thread, run=run.run_id, question=redact_text(text))
            if self.model is None:
                reply = run.reply(no_model_text(), StopReason.no_model, fault=NO_MODEL_FAULT)
            else:
                try:
                    with self.memory.lock(thread, self.memory_settings.lock_ttl_s, self.memory_settings.lock_wait_s):
                        reply = run.execute(text)
                except ThreadBusy:
                    reply = run.reply(busy_text(self.memory_settings.lock_ttl_s), StopReason.busy)
                except MemoryUnavailable as exc:
                    reply = run.reply(memory_unavailable_text(exc), StopReason.memory_unavailable, fault=exc.fault)
            usage = reply.usage.model_dump()
            span.set(stop_reason=reply.stop_reason.value, steps=len(reply.steps), **usage)
            _log(
                "run_end",
                thread=thread,
                run=run.run_id,
                stop_reason=reply.stop_reason.value,
                answer=reply.text,
                evidence=_evidence_counts(reply.evidence),
                steps=len(reply.steps),
                duration_s=round(reply.duration_s, 3),
                **usage,
            )
        metrics.run_finished(reply.stop_reason.value, len(reply.steps), reply.duration_s, run.first_answer_s)
        self.audit.record(run_finished(principal, thread, run.run_id, text, reply.stop_reason.value))
        return reply

    def reset(self, thread: str) -> None:
        """Forget a thread, waiting for a run in it to finish first. Raises `ThreadBusy`, `MemoryUnavailable`."""
        with self.memory.lock(thread, self.memory_settings.lock_ttl_s, self.memory_settings.lock_wait_s):
            self.memory.reset(thread)


@dataclass(frozen=True)
class _AskAgain:
    """The model is asked again: with tools, or without them for a last answer when `final` (why
    the loop stops) is set. Once set, it stays set for every later step."""

    final: StopReason | None = None


@dataclass(frozen=True)
class _Finished:
    """The run is over, with this reply."""

    reply: Reply


# What a step leads to: each branch of a step says it, so the loop itself has no branches.
_Next = _AskAgain | _Finished


class _StepOutcomes(NamedTuple):
    """A step's calls answered, in order, and what the budget refused, if anything."""

    outcomes: list[Outcome]
    rendered: list[str]  # each outcome's result as rendered, rendered once a step
    refusal: Refusal | None


@dataclass
class _Run:
    """The state of one run; lives only as long as `Agent.run`."""

    agent: Agent
    thread: str
    _: KW_ONLY
    progress: Progress
    started: float
    principal: Principal | None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # Loop nudges, each where it was issued (after that many of this turn's blocks): sent, never stored.
    notes: list[tuple[int, Block]] = field(default_factory=list)
    approvals: list[ApprovalRequest] = field(default_factory=list)
    # Every call of this turn and what came of it: for a reply the model did not write.
    outcomes: list[Outcome] = field(default_factory=list)
    # This turn's results as the model was given them, by step: what the answer is checked against.
    sources: list[Source] = field(default_factory=list)
    question: str = ""
    partial: str = ""  # an answer cut at the output limit, being continued
    # When the last model call's text was first shown (streamed), and the cut part's of an answer
    # being continued: the time to first answer is the answer's, not a preamble to tool calls'.
    shown_at: float | None = None
    partial_shown_at: float | None = None
    first_answer_s: float | None = None  # seconds to the answer's first line shown, or to the answer
    nudged_empty: bool = False
    drift_noted: bool = False
    recalled: Recalled | None = None  # past incidents like the question (bot/agent/recollection.py)
    context_note: str | None = None  # the request was shrunk to fit the model's context: for the next step's note
    shown_args: dict[str, Any] = field(default_factory=dict)  # a call's raw arguments -> as shown (_shown_args)

    def execute(self, text: str) -> Reply:
        agent, limits = self.agent, self.agent.limits
        state = agent.memory.load(self.thread, new_turn=True)
        # A secret pasted into a question is no more the model's business than one in a log line.
        self.question = redact_text(text)
        user = Block(messages=[Message.user(self.question)])
        agent.memory.append(self.thread, [user])
        turn_blocks: list[Block] = [user]
        self._recall(text)
        guard = LoopGuard(limits, state.repeats)
        budget = CallBudget(limits)
        next_step: _Next = _AskAgain()
        while isinstance(next_step, _AskAgain):
            next_step = self._step(state, turn_blocks, guard, budget, next_step.final)
        return next_step.reply

    def _step(
        self,
        state: ThreadState,
        turn_blocks: list[Block],
        guard: LoopGuard,
        budget: CallBudget,
        final: StopReason | None,
    ) -> _Next:
        """Ask the model once; what its reply leads to."""
        if requested():
            return _Finished(self._cancelled())
        stop = final if final is not None else self._limit_reached()
        try:
            turn = self._ask(state, turn_blocks, final=stop)
        except ModelUnavailable as exc:
            text = llm_unavailable_text(exc, self.steps)
            return _Finished(self.reply(text, StopReason.llm_unavailable, fault=exc.fault))
        except Cancelled:
            return _Finished(self._cancelled())
        if stop is None and turn.tool_calls:
            return self._tool_step(self._with_unique_ids(turn, state, turn_blocks), guard, budget, turn_blocks)
        return self._answer_step(state, turn_blocks, turn, stop)

    def _recall(self, text: str) -> None:
        """Past incidents like the question: the strong ones told to the model beside it, never stored."""
        recollection = self.agent.recollection
        self.recalled = recollection.recall(text, self.principal, self.thread) if recollection else None
        note = seen_before_note(self.recalled, recollection.store.clock()) if recollection and self.recalled else None
        if note is not None:
            self.notes.append((1, Block(messages=[note])))

    def _limit_reached(self) -> StopReason | None:
        """Why the next step must be the last, if a limit says so (counting that step)."""
        limits = self.agent.limits
        if len(self.steps) + 1 >= limits.max_steps:
            return StopReason.max_steps
        if time.monotonic() - self.started >= limits.time_budget_s:
            return StopReason.time_budget
        return None

    def _answer_step(
        self, state: ThreadState, turn_blocks: list[Block], turn: ModelTurn, stop: StopReason | None
    ) -> _Next:
        """A step that runs no call: the answer (or the part of it before the output limit, to be
        continued), or none (nudged once while tools are on offer)."""
        # Tool calls on a step without tools are not run; what came with them is only a preamble.
        answer = "" if turn.tool_calls else (turn.content.strip() or _refused(turn))
        ended = ended_text(turn.finish_reason) or ("the model declined to answer" if turn.refusal else None)
        preamble = self._preamble(turn, len(self.steps) + 1)
        decision = (
            StepDecision.tool_calls_ignored
            if turn.tool_calls
            else (StepDecision.answer if answer else StepDecision.empty)
        )
        if answer and turn.cut and not self.partial:
            # Cut at the output limit: asked once to go on from where it stopped (kept as
            # written at its end: it may stop after a line break).
            self.partial = turn.content.lstrip()
            self.partial_shown_at = self.shown_at
            self._record(Step(n=len(self.steps) + 1, decision=StepDecision.answer_cut, **_tokens(turn)), [], turn)
            self.notes.append((len(turn_blocks), Block(messages=[Message.assistant(self.partial), continue_note()])))
            return _AskAgain(stop)
        answer = self._joined(answer, turn.content, turn.cut)
        written = len(answer) - (len(CUT_ANSWER) if answer.endswith(CUT_ANSWER) else 0)
        step = Step(n=len(self.steps) + 1, decision=decision, preamble=preamble, note=ended, **_tokens(turn))
        # A nudge only while tools are on offer: on a last, tool-less step the reply says why it
        # stopped. A reply a filter stopped is not asked for again: it would be stopped again.
        if not answer and not self.nudged_empty and stop is None and ended is None:
            self.nudged_empty = True
            self.notes.append((len(turn_blocks), Block(messages=[nudge_empty()])))
            self._record(step, [], turn)
            return _AskAgain()
        self._record(step, [], turn)
        if not answer:
            found = findings_text(self.outcomes)
            text = stopped_text(stop, self.steps, found, why=ended)
            return _Finished(self.reply(text, stop or StopReason.no_answer, ended=ended))
        if ended is not None and not turn.refusal:
            answer += f"\n\n({ended[0].upper()}{ended[1:]}.)"
        finished = self._finish(
            state, turn_blocks, answer, stop or StopReason.answered, ended, own=len(answer) - written
        )
        return _Finished(finished)

    def _cancelled(self) -> Reply:
        """The question given up: the thread's memory says so (every call stored has its result),
        so the next question is asked in a thread that makes sense."""
        try:
            self.agent.memory.append(self.thread, [Block(messages=[Message.assistant(CANCELLED_NOTE)])])
        except MemoryUnavailable as exc:
            _log("cancel_unsaved", thread=self.thread, run=self.run_id, error=str(exc))
        return self.reply(cancelled_text(self.steps), StopReason.cancelled)

    def _joined(self, answer: str, written: str, cut: bool) -> str:
        """The answer with the part that was cut before it (joined as written: the continuation
        may start mid-sentence, with its own space), and said to be cut if it still is."""
        if self.partial:
            answer = (self.partial + written.rstrip()) if answer else self.partial
        if answer and cut:
            answer += CUT_ANSWER
        return answer

    def _with_unique_ids(self, turn: ModelTurn, state: ThreadState, turn_blocks: list[Block]) -> ModelTurn:
        """The turn's calls with ids no other message of this thread has (bot/llm/shaping.py)."""
        messages = [m for b in [*state.blocks, *turn_blocks] for m in b.messages]
        taken = {c.id for m in messages for c in m.tool_calls} | {m.tool_call_id for m in messages if m.tool_call_id}
        return dataclasses.replace(turn, tool_calls=unique_ids(turn.tool_calls, taken))

    def _finish(
        self,
        state: ThreadState,
        turn_blocks: list[Block],
        answer: str,
        reason: StopReason,
        ended: str | None = None,
        own: int = 0,
    ) -> Reply:
        """The answer stored and given; its last `own` characters are opsbot's notes (cut, ended),
        not the model's claims."""
        # Before the answer is stored and the thread folded: a person has it from here on.
        self.first_answer_s = self._since(self.partial_shown_at or self.shown_at or time.monotonic())
        turn_blocks.append(Block(messages=[Message.assistant(answer)]))
        try:
            self.agent.memory.append(self.thread, turn_blocks[-1:])
        except MemoryUnavailable as exc:
            # The answer exists: give it, and say it may not be remembered.
            _log("answer_unsaved", thread=self.thread, run=self.run_id, error=str(exc))
            evidence = self._checked(answer, own, state)
            return self.reply(answer + UNSAVED_ANSWER, reason, ended=ended, evidence=evidence)
        evidence = self._checked(answer, own, state)  # before folding: the window still holds every stored result
        try:
            self._fold(state, turn_blocks)
        except MemoryUnavailable as exc:
            # The answer is stored; the window stays over budget and is folded next turn.
            _log("fold_failed", thread=self.thread, run=self.run_id, error=str(exc))
        checked = bool(self.outcomes) or not len(self.agent.registry)
        return self.reply(answer, reason, checked=checked, ended=ended, evidence=evidence)

    def _checked(self, answer: str, own: int, state: ThreadState) -> Evidence | None:
        """The model's part of the answer checked against this turn's results and those the thread
        keeps (None when no tool is offered: nothing could have backed it). Checked as the reply
        gives it, redacted, so its spans point into the reply's text."""
        if not len(self.agent.registry):
            return None
        shown = redact_text(answer)
        evidence = check_answer(
            shown[: len(shown) - own], self.question, [*_stored_sources(state.blocks), *self.sources]
        )
        calls = (Ran(c.tool, c.args, c.status.value) for s in self.steps for c in s.calls)
        evidence.not_looked_at = not_looked_at(self.question, calls, self.agent.subjects)
        return evidence

    def _tool_step(self, turn: ModelTurn, guard: LoopGuard, budget: CallBudget, turn_blocks: list[Block]) -> _AskAgain:
        """Run a step's calls and add its block to the turn; the model is asked again, without
        tools when the loop must stop. A note this step issues goes right after this step's block."""
        agent, step_n = self.agent, len(self.steps) + 1
        preamble = self._preamble(turn, step_n)
        calls = [ToolCall(c.id, c.name, c.arguments) for c in turn.tool_calls]
        if turn.cut:
            # The output limit cut the reply: the last call's arguments are incomplete, and none runs.
            limit = agent.model.max_answer_tokens if agent.model is not None else 0
            outcomes = [Outcome(call, cut_call(limit), 0, 0.0) for call in calls]
            texts, refusal = [o.result.render() for o in outcomes], None
        else:
            outcomes, texts, refusal = self._outcomes(step_n, calls, guard, budget)
        self.outcomes.extend(outcomes)
        rendered = [numbered(step_n, text) for text in texts]
        self.sources += [
            result_source(step_n, o.call.name, r, o.call.arguments) for o, r in zip(outcomes, rendered, strict=True)
        ]
        assistant = Message.assistant(turn.content, list(turn.tool_calls))
        block = Block.tool_step(
            assistant, [Message.tool(o.call.id, r) for o, r in zip(outcomes, rendered, strict=True)]
        )
        agent.memory.append(self.thread, [block], guard.changed())
        turn_blocks.append(block)
        stop: StopReason | None = None
        note = "the reply was cut at the output limit: no call ran" if turn.cut else None
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
                self.notes.append((len(turn_blocks), Block(messages=[nudge_drift(drift)])))
                note = f"{drift}: nudged"
        records = [_call_record(o, self._shown_args(o.call.arguments), agent.registry) for o in outcomes]
        if refusal is not None:
            note = "; ".join(n for n in (refusal.note(outcomes), note) if n)
        if turn.renamed:
            note = "; ".join(n for n in (f"tool names read as offered: {', '.join(turn.renamed)}", note) if n)
        step = Step(
            n=step_n, decision=StepDecision.tool_calls, calls=records, note=note, preamble=preamble, **_tokens(turn)
        )
        self._record(step, texts, turn)
        return _AskAgain(stop)

    def _preamble(self, turn: ModelTurn, step_n: int) -> str | None:
        """What the model wrote beside its tool calls, redacted: decided here, once, to be part of the
        step (shown with it by every front end, before its calls run), never the answer."""
        text = redact_text(turn.content.strip()) if turn.tool_calls else ""
        if not text:
            return None
        self.progress.on_preamble(step_n, text)
        return text

    def _outcomes(self, step_n: int, calls: list[ToolCall], guard: LoopGuard, budget: CallBudget) -> _StepOutcomes:
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
            self.progress.on_tool_start(step_n, call.name, self._shown_args(call.arguments))
        results, texts = {}, {}
        for outcome in agent.executor.run_many(to_run, self.principal):
            # The step number goes first in what the model is given: it counts within the cap.
            capped = outcome.result.capped(agent.limits.max_result_tokens * CHARS_PER_TOKEN - STEP_FIELD_CHARS)
            key = call_key(outcome.call)
            texts[key] = capped.render()
            guard.record(outcome.call, capped, texts[key])
            results[key] = Outcome(outcome.call, capped, outcome.attempts, outcome.duration_s)
        outcomes, rendered = [], []
        for call in calls:
            key = call_key(call)
            shared = results.get(key)
            if shared is not None:
                first = call is first_of[key]
                outcomes.append(
                    Outcome(call, shared.result, shared.attempts if first else 0, shared.duration_s if first else 0.0)
                )
                rendered.append(texts[key])
                continue
            if refusal is not None and key in refusal.keys:
                outcomes.append(Outcome(call, refusal.result, 0, 0.0))
            else:
                outcomes.append(Outcome(call, checks[key].result(), 0, 0.0))
            rendered.append(outcomes[-1].result.render())
        return _StepOutcomes(outcomes, rendered, refusal)

    def _ask(self, state: ThreadState, turn_blocks: list[Block], final: StopReason | None) -> ModelTurn:
        agent, step_n = self.agent, len(self.steps) + 1
        self.progress.on_model_call(step_n)
        head = [Message.system(agent.system_prompt)]
        if state.summary:
            head.append(Message.system(f"Summary of earlier turns in this thread:\n{state.summary}"))
        tail = [final_note(final, agent.limits)] if final is not None else []
        budget = agent.limits.max_prompt_tokens
        messages = fit_prompt(head, state.blocks, self._with_notes(turn_blocks), tail, budget)
        assert agent.model is not None
        sink = AnswerLines(self.progress, step_n, continuing=bool(self.partial))
        model, schemas = agent.model, None if final is not None else agent.schemas
        try:
            turn = abandonable(lambda: model.complete([m.to_api() for m in messages], tools=schemas, sink=sink))
        except ModelUnavailable as exc:
            if not exc.too_long:
                raise
            # The model's context is smaller than opsbot's estimate allowed for: asked once more in
            # half the size (older turns left out, older results shortened); too long again is said.
            smaller = min(budget, sum(message_tokens(m) for m in messages)) // 2
            messages = fit_prompt(head, state.blocks, self._with_notes(turn_blocks), tail, smaller)
            self.context_note = f"too long for the model's context: asked again in ~{smaller} tokens"
            turn = abandonable(lambda: model.complete([m.to_api() for m in messages], tools=schemas, sink=sink))
        sink.close()
        self.shown_at = sink.shown_at
        self.usage.add(turn.usage)
        return turn

    def _with_notes(self, turn_blocks: list[Block]) -> list[Block]:
        """This turn's blocks with each note where it was issued: a nudge stays beside what it was
        about, rather than being sent again, stale, at the end of every later request."""
        out: list[Block] = []
        for index, block in enumerate(turn_blocks):
            out += [block, *(note for at, note in self.notes if at == index + 1)]
        return out

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

    def _record(self, step: Step, results: list[str], turn: ModelTurn | None = None) -> None:
        """`step` kept, counted, audited, logged and shown; `results`: its calls' results, rendered."""
        if self.context_note:
            step = step.model_copy(update={"note": "; ".join(n for n in (self.context_note, step.note) if n)})
            self.context_note = None
        self.steps.append(step)
        metrics.model_answered(step.model)
        metrics.tool_calls(((c.tool, c.status.value) for c in step.calls), self._known)
        for call in step.calls:
            audited(
                self.agent.audit,
                asked_by=self.principal,
                thread=self.thread,
                run=self.run_id,
                tool=call.tool,
                args=call.args,
                status=call.status,
            )
        if _logging():
            self._log_step(step, results, turn)
        self.progress.on_step(step)

    def _log_step(self, step: Step, results: list[str], turn: ModelTurn | None) -> None:
        _log(
            "step",
            thread=self.thread,
            run=self.run_id,
            step=step.n,
            decision=step.decision.value,
            calls=[c.model_dump(mode="json") for c in step.calls],
            results=results,
            note=step.note,
            preamble=step.preamble,
            prompt_tokens=step.prompt_tokens,
            completion_tokens=step.completion_tokens,
            model=step.model,
            model_ms=step.model_ms,
            first_token_ms=step.first_token_ms,
            reasoning=_thinking(turn),
        )

    def _shown_args(self, raw: str) -> Any:
        """A call's arguments as people see them (parsed when they are JSON, redacted), worked out
        once a run: the progress line and the step's record both show them."""
        if raw not in self.shown_args:
            _, parsed = canonical_arguments(raw)
            self.shown_args[raw] = redact(parsed if parsed is not None else raw)
        return self.shown_args[raw]

    def reply(
        self,
        text: str,
        reason: StopReason,
        checked: bool = True,
        *,
        fault: Fault | None = None,
        ended: str | None = None,
        evidence: Evidence | None = None,
    ) -> Reply:
        return Reply(
            thread=self.thread,
            text=redact_text(text),
            stop_reason=reason,
            steps=self.steps,
            usage=self.usage,
            duration_s=time.monotonic() - self.started,
            approvals=self.approvals,
            checked=checked,
            run_id=self.run_id,
            fault=fault,
            ended=ended,
            model=next((s.model for s in reversed(self.steps) if s.model), None),
            charts=charts_of((o.call.name, o.result) for o in self.outcomes),
            recalled=self.recalled,
            evidence=evidence,
        )

    def _known(self, tool: str) -> bool:
        return self.agent.registry.get(tool) is not None

    def _since(self, moment: float) -> float:
        return max(moment - self.started, 0.0)


def _stored_sources(blocks: list[Block]) -> list[Source]:
    """Earlier turns' results the thread keeps, each with the call that made it."""
    out: list[Source] = []
    for block in blocks:
        calls = {c.id: c for m in block.messages for c in m.tool_calls}
        for message in block.messages:
            call = calls.get(message.tool_call_id or "")
            if message.role == "tool" and call is not None:
                out.append(result_source(None, call.name, message.content or "", call.arguments))
    return out


def _refused(turn: ModelTurn) -> str:
    return refused_text(turn.refusal) if turn.refusal else ""


def _logging() -> bool:
    """Whether the loop's records are logged (INFO on `opsbot.steps`): what only a record needs is
    not worked out otherwise."""
    return log.isEnabledFor(logging.INFO)


def _log(event: str, **fields: Any) -> None:
    """One JSON record per event: a thread can be replayed from its run_start, steps and run_end.
    While tracing is on, each record names its trace, so a log line leads to the trace."""
    if not _logging():
        return
    trace = tracing.trace_id()
    if trace is not None:
        fields["trace_id"] = trace
    log.info(json.dumps({"event": event, **fields}, ensure_ascii=False, default=str))


def _evidence_counts(evidence: Evidence | None) -> dict[str, Any] | None:
    if evidence is None:
        return None
    return {
        "verified": len(evidence.citations) + len(evidence.findings),
        "unsupported": len(evidence.unsupported),
        "contradicted": len(evidence.contradicted),
        "check_ms": evidence.check_ms,
    }


def _thinking(turn: ModelTurn | None) -> str | None:
    """The model's thinking, redacted, for whoever reads the step log (-v): never the answer."""
    if turn is None or not turn.reasoning:
        return None
    return redact_text(turn.reasoning)[:REASONING_LOG_CHARS]


def _tokens(turn: ModelTurn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.usage.prompt_tokens,
        "completion_tokens": turn.usage.completion_tokens,
        "model_ms": round(turn.duration_s * 1000, 1),
        "first_token_ms": turn.usage.first_token_ms,
        "model": turn.model or None,  # the model the server says answered, when it says
    }


def _approval_requests(outcomes: list[Outcome]) -> list[ApprovalRequest]:
    """The approval requests among `outcomes`, each once (identical calls share one request)."""
    requests: dict[str, ApprovalRequest] = {}
    for outcome in outcomes:
        error = outcome.result.error
        # A write without a request (an MCP tool's: they cannot be approved yet) was refused; its
        # answer to the model says so, and there is nothing to offer a person.
        if error is not None and error.type is ErrorType.needs_approval and outcome.result.data is not None:
            request = ApprovalRequest.model_validate(outcome.result.data)
            requests.setdefault(request.id, request)
    return list(requests.values())


def _call_record(outcome: Outcome, args: Any, registry: Registry) -> CallRecord:
    error = outcome.result.error
    return CallRecord(
        id=outcome.call.id,
        tool=outcome.call.name,
        args=args,
        status=outcome.result.status,
        error=error.message if error else None,
        attempts=outcome.attempts,
        duration_ms=round(outcome.duration_s * 1000, 1),
        summary=brief(outcome.result, registry.get(outcome.call.name)),
    )
