"""What the runbook engine raises: a request it turns down, and a run this process lost."""

from __future__ import annotations


class RunRefused(Exception):
    """A request the engine will not carry out (bad parameters, not an approver, nothing waiting).
    Nothing was changed; `message` is written for the person who asked."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RunLost(Exception):
    """Another process (or a cancel) saved the run since this one loaded it: stop touching it."""
