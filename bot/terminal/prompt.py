"""Reading what the person types: prompt_toolkit at a terminal (line editing, history, completion),
plain lines otherwise (a pipe, a script, a test feeding stdin).

Both say the same two things: `line()` is the next line, or raises EOFError when the person
leaves (Ctrl-D, end of input, Ctrl-C at an empty prompt); `confirm()` is a y/N answer, No unless
they type yes (Ctrl-C, Ctrl-D and end of input are No too)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from .history import RedactedHistory

YES = ("y", "yes")


class Prompter(Protocol):
    def line(self, prompt: str) -> str: ...

    def confirm(self, question: str) -> bool: ...

    def leave(self) -> bool:
        """End the prompt being shown, as Ctrl-D would; False when none is (a signal handler asks)."""
        ...


class LinePrompter:
    """Lines from stdin, as `input()` reads them (its prompt is printed, not echoed back)."""

    def line(self, prompt: str) -> str:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        text = sys.stdin.readline()
        if not text:
            raise EOFError
        return text.rstrip("\n")

    def confirm(self, question: str) -> bool:
        try:
            return self.line(f"{question} [y/N] ").strip().lower() in YES
        except EOFError:
            return False

    def leave(self) -> bool:
        return False  # reading stdin is interrupted by the signal's exception itself


class EditingPrompter:
    """prompt_toolkit's prompt: arrows, Emacs keys, Ctrl-R search, ↑ through past questions."""

    def __init__(self, history: Path | None, completer: Completer | None) -> None:
        self.session: PromptSession[str] = PromptSession(
            history=RedactedHistory(history) if history is not None else None,
            completer=completer,
            complete_while_typing=False,  # Tab completes; typing a question is not interrupted
            key_bindings=_ctrl_c_clears(),
        )
        self.answers: PromptSession[str] = PromptSession()  # y/N answers are not history

    def line(self, prompt: str) -> str:
        try:
            return self.session.prompt(prompt)
        except KeyboardInterrupt:  # at an empty prompt (a typed line is cleared instead)
            raise EOFError from None

    def confirm(self, question: str) -> bool:
        try:
            return self.answers.prompt(f"{question} [y/N] ").strip().lower() in YES
        except (KeyboardInterrupt, EOFError):
            return False

    def leave(self) -> bool:
        for session in (self.session, self.answers):
            app = session.app
            if app.is_running and app.loop is not None:
                app.loop.call_soon_threadsafe(functools.partial(app.exit, exception=EOFError))
                return True
        return False


def _ctrl_c_clears() -> KeyBindings:
    """Ctrl-C clears a typed line, as in a shell; at an empty prompt it leaves."""
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return bindings
