"""`opsbot chat`: read a line, answer it, again, until the person leaves.

A question runs on a worker thread while this one waits, so Ctrl-C lands here and only sets the
run's cancel event (tools/cancel.py): the model's reply stops being read, a running tool's
process is killed as on timeout, the run ends `cancelled` with the thread's memory whole, and the
prompt comes back. A second Ctrl-C while it winds down leaves the chat."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ...config.policy import Policy
from ...tools.background import Job
from ...tools.cancel import cancellable
from ...tools.commands import ApprovalRequest
from ..agent import Agent, Reply, StopReason, marked, recalled_text
from ..agent.prompts import no_model_text
from ..charts import chart_of
from ..commands import CommandOutput, Question, decide, run_command
from .approvals import TerminalApprovals
from .charts import show_charts
from .completion import LEAVE, completer
from .history import history_path
from .live import LiveProgress
from .plain import PlainProgress
from .prompt import EditingPrompter, LinePrompter, Prompter
from .screen import console, rendered, say
from .steps import checked_lines
from .user import TERMINAL_USER

PROMPT = "you> "
ANSWER_PROMPT = "opsbot> "
WAIT_S = 0.1  # how often the waiting thread wakes, so Ctrl-C is taken at once
# Asked to leave while a given-up question winds down: how long its command has to be killed.
LEAVE_WAIT_S = 3.0
HANGUPS = (signal.SIGHUP, signal.SIGTERM)

T = TypeVar("T")


class Leave(BaseException):
    """The terminal closed (SIGHUP) or opsbot was told to stop (SIGTERM): the question running is
    given up as on Ctrl-C, so the command it runs is killed rather than left behind, then the chat ends."""


class ChatSession:
    def __init__(self, agent: Agent, policy: Policy, *, thread: str, prompter: Prompter, live: bool) -> None:
        self.agent = agent
        self.policy = policy
        self.thread = thread
        self.prompter = prompter
        self.live = live
        self.out = console(sys.stdout)
        self.steps = self.out if live else console(sys.stderr)
        self.approvals = TerminalApprovals(
            policy, TERMINAL_USER, thread=thread, out=self.out, prompter=prompter, audit=agent.audit
        )
        self.leaving = False  # SIGHUP or SIGTERM came: no more questions

    @classmethod
    def open(cls, agent: Agent, policy: Policy, thread: str, plain: bool) -> ChatSession:
        """Line editing and history when a person types at a terminal; the live view when one reads it."""
        live = rendered(console(sys.stdout), plain)
        prompter: Prompter = LinePrompter()
        if sys.stdin.isatty() and sys.stdout.isatty():
            try:
                prompter = EditingPrompter(history_path(), completer(policy))
            except OSError as exc:
                say(console(sys.stderr), f"No history this time ({exc}); line editing works.", "yellow")
                prompter = EditingPrompter(None, completer(policy))
        return cls(agent, policy, thread=thread, prompter=prompter, live=live)

    def banner(self, model: str) -> None:
        say(self.out, f"opsbot · model {model} · memory: {self.agent.memory.describe()} · thread {self.thread}", "bold")
        if self.agent.model is None:
            say(self.out, no_model_text(), "yellow")
        keys = " Ctrl-C gives a question up; Ctrl-D leaves." if isinstance(self.prompter, EditingPrompter) else ""
        say(self.out, f"Type a question, `help` for direct commands, `exit` to leave.{keys}")

    def loop(self) -> None:
        for hangup in HANGUPS:
            signal.signal(hangup, self._hang_up)
        try:
            self._lines()
        except Leave:
            return

    def _hang_up(self, signum: int, frame: object) -> None:
        self.leaving = True
        # At prompt_toolkit's prompt an exception raised here would be its event loop's, not ours.
        if not self.prompter.leave():
            raise Leave

    def _lines(self) -> None:
        while not self.leaving:
            try:
                text = self.prompter.line(PROMPT).strip()
            except EOFError:
                say(self.out, "")
                return
            if text.lower() in LEAVE:
                return
            if text:
                self.answer(text)

    def answer(self, text: str) -> None:
        """A direct command or a question, answered; a write command it asks for is offered for approval."""
        decision = decide(self.policy, text, can_ask=self.agent.model is not None)
        if isinstance(decision, Question):
            self.question(text)
            return
        output: CommandOutput = self._watched(
            lambda: run_command(self.agent, decision, self.thread, TERMINAL_USER), f"running {text}"
        )
        say(self.out, output.text)
        chart = chart_of(output.tool, output.result)
        show_charts(self.out, [chart] if chart is not None else [])
        if output.approval is not None:
            self._offer(output.approval, text, continues_agent=False)

    def question(self, text: str) -> None:
        reply = self._ask(text)
        self._remember(text, reply)
        for request in reply.approvals:
            self._offer(request, text, continues_agent=True)

    def _remember(self, text: str, reply: Reply) -> None:
        """Past incidents recalled for this question shown, and this thread's record written."""
        recollection = self.agent.recollection
        if recollection is None:
            return
        told = recalled_text(reply.recalled, recollection.store.clock())
        if told:
            say(self.out, told, "bright_black")
        recollection.remember(text, reply, TERMINAL_USER)

    def _offer(self, request: ApprovalRequest, why: str, continues_agent: bool) -> None:
        outcome = self.approvals.offer(request, why, continues_agent)
        if outcome is not None:
            self.question(outcome)  # the model hears the outcome as the thread's next turn

    def _ask(self, text: str) -> Reply:
        if self.live:
            live = LiveProgress(self.out)
            live.start("asking the model")
            try:
                reply = self._cancellable(lambda cancel: self._run(text, live, cancel))
            finally:
                live.stop()
            if reply.stop_reason is not StopReason.cancelled:
                # Rendered once, whole: each unsupported or contradicted claim marked where it stands.
                live.finish(marked(reply.text, reply.evidence), None if reply.stop_reason == "answered" else "yellow")
        else:
            plain = PlainProgress(self.steps, self.out, prompt=ANSWER_PROMPT, style="cyan")
            reply = self._cancellable(lambda cancel: self._run(text, plain, cancel))
            if reply.stop_reason is not StopReason.cancelled:
                plain.finish(reply.text, "cyan" if reply.stop_reason == "answered" else "yellow")
        show_charts(self.out, reply.charts)
        if reply.stop_reason is StopReason.cancelled:
            say(self.out, reply.text, "yellow")
        else:
            for line, style in checked_lines(reply):
                say(self.out, line, style)
        say(self.out, f"  ({footer(reply)})", "bright_black")
        return reply

    def _run(self, text: str, progress: LiveProgress | PlainProgress, cancel: threading.Event) -> Reply:
        return self.agent.run(text, thread=self.thread, progress=progress, principal=TERMINAL_USER, cancel=cancel)

    def _watched(self, work: Callable[[], T], label: str) -> T:
        """A direct command, with a spinner in the live view; Ctrl-C stops what it runs."""

        def run(cancel: threading.Event) -> T:
            with cancellable(cancel):
                return work()

        if not self.live:
            return self._cancellable(run)
        live = LiveProgress(self.out)
        live.start(label)
        try:
            return self._cancellable(run)
        finally:
            live.stop()

    def _cancellable(self, work: Callable[[threading.Event], T]) -> T:
        """`work` on a worker thread; Ctrl-C here sets its cancel event, and waits for it to end."""
        cancel = threading.Event()
        job = Job(lambda: work(cancel), "opsbot-question")
        try:
            _wait(job)
        except (KeyboardInterrupt, Leave) as stop:
            cancel.set()
            say(self.steps, "  cancelling… (Ctrl-C again leaves opsbot)", "yellow")
            if not _wound_down(job) or isinstance(stop, Leave):
                raise Leave from None
        return job.result()


def _wound_down(job: Job[Any]) -> bool:
    """Wait for a cancelled job to end. False if the person asks to leave meanwhile (Ctrl-C again,
    SIGHUP, SIGTERM): then it has LEAVE_WAIT_S more, those signals ignored, so the command it ran
    is still killed rather than left behind."""
    try:
        _wait(job)
        return True
    except (KeyboardInterrupt, Leave):
        for ignored in (signal.SIGINT, *HANGUPS):
            signal.signal(ignored, signal.SIG_IGN)
        job.join(LEAVE_WAIT_S)
        return False


def _wait(job: Job[Any]) -> None:
    while job.running:
        job.join(WAIT_S)


def footer(reply: Reply) -> str:
    usage = reply.usage
    first = f" · first token {usage.first_token_ms:.0f} ms" if usage.first_token_ms is not None else ""
    return (
        f"{reply.stop_reason.value} · {len(reply.steps)} step(s) · {usage.model_calls} model call(s) · "
        f"{usage.prompt_tokens + usage.completion_tokens} tokens{first} · {reply.duration_s:.1f}s"
    )
