"""The answer as the model writes it, passed to a front end a redacted line at a time.

The model's pieces arrive mid-word; redaction needs whole lines (its line rules stay within one),
and a run of base64 lines may be a key's body (tools/redact/pem.py), so such lines wait until a
line that is not one ends them and the whole stretch is redacted together. What was shown is a
preview: the reply's text (redacted whole) is the answer.
"""

from __future__ import annotations

import time

from ...tools.redact import might_be_key_material, redact_text
from .reply import Progress


class AnswerLines:
    """A `TextSink` for one model call: complete lines, redacted, to `progress.on_answer_text`."""

    def __init__(self, progress: Progress, step: int, continuing: bool = False) -> None:
        self.progress = progress
        self.step = step
        # An answer begins at its first non-space character, as the reply's text does; the
        # continuation of a cut answer keeps its leading space.
        self.begun = continuing
        self.partial = ""  # the line being written
        self.waiting: list[str] = []  # lines that may be a key's body
        self.shown_at: float | None = None  # time.monotonic() of the first text passed on

    def text(self, piece: str) -> None:
        if not self.begun:
            piece = piece.lstrip()
            self.begun = bool(piece)
        *complete, self.partial = (self.partial + piece).split("\n")
        for line in complete:
            self._line(line)

    def reset(self) -> None:
        """What was shown was not the answer (thinking without its opening tag)."""
        self.partial, self.waiting, self.begun = "", [], False
        self.progress.on_answer_reset(self.step)

    def close(self) -> None:
        """The reply is complete: show what is left."""
        rest = [*self.waiting, self.partial] if self.partial else self.waiting
        self.partial, self.waiting = "", []
        if rest:
            self._show(redact_text("\n".join(rest)))

    def _line(self, line: str) -> None:
        if might_be_key_material(line):
            self.waiting.append(line)
            return
        self._show(redact_text("\n".join([*self.waiting, line])) + "\n")
        self.waiting = []

    def _show(self, text: str) -> None:
        if self.shown_at is None:
            self.shown_at = time.monotonic()
        self.progress.on_answer_text(self.step, text)


class AnswerPreview:
    """The answer as it streamed: the text of each model call, less what turned out not to be the
    answer (thinking, a preamble to tool calls). What a front end still owes is `rest(reply.text)`.

    Shared by the terminal and Slack."""

    def __init__(self) -> None:
        self.parts: dict[int, str] = {}

    @property
    def text(self) -> str:
        return "".join(self.parts.values())

    def add(self, step: int, text: str) -> None:
        self.parts[step] = self.parts.get(step, "") + text

    def drop(self, step: int) -> str:
        """Forget what `step` gave (it was thinking); what it was."""
        return self.parts.pop(step, "")

    def clear(self) -> None:
        """What streamed came before tool calls: the model's words, not its answer."""
        self.parts = {}

    def rest(self, answer: str) -> str | None:
        """What `answer` adds to what streamed (a cut note, say), or None when what streamed is not
        how `answer` begins (a fallback text, a redaction only the whole text showed)."""
        shown = self.text
        head = shown.rstrip()
        if not answer.startswith(head):
            return None
        rest = answer[len(head) :]
        # The answer is stripped; what streamed kept its last newline, which is not to be given again.
        trailing = shown[len(head) :]
        return rest[len(trailing) :] if rest.startswith(trailing) else rest
