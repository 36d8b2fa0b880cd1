"""Other models asked while the configured one is unavailable (`llm.fallbacks`).

A model that cannot answer now (no connection, a timeout, a 5xx, a 429 past its retries, an error
inside its stream) hands the question to the next one in order. A
configuration error (a key refused, a model the server does not serve, a request refused as too
long) is raised at once: a fallback would hide what an operator has to fix. Once on a fallback,
the configured model is asked first again at most once every `recheck_s`, and answers again as
soon as it can. Which model answered is on every turn (`ModelTurn.model`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .client import ModelClient
from .health import ModelHealth
from .streaming import TextSink
from .turns import ModelTurn, ModelUnavailable

log = logging.getLogger("opsbot.llm")

RECHECK_S = 60.0


def _passes_on(exc: ModelUnavailable) -> bool:
    """Whether another model may answer instead: the model is down or failing, not misconfigured.
    Nothing listening at its address is a setting to fix for one server, yet also what a crashed
    server looks like: with fallbacks, the next one answers and the log says why."""
    return exc.transient or (exc.status is None and not exc.too_long)


class Fallbacks:
    """The configured model, then each fallback in order; a `Model` like any client."""

    def __init__(
        self,
        primary: ModelClient,
        fallbacks: Sequence[ModelClient],
        *,
        recheck_s: float = RECHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.models = [primary, *fallbacks]
        self.recheck_s = recheck_s
        self.clock = clock
        self._lock = threading.Lock()
        self._current = 0  # the model questions go to while the ones before it are unavailable
        self._primary_failed_at = 0.0

    @property
    def max_answer_tokens(self) -> int:
        return self.models[self._current].max_answer_tokens

    def check(self) -> ModelHealth:
        """The configured model's health: fallbacks stand in for it, they do not make it well."""
        return self.primary.check()

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sink: TextSink | None = None
    ) -> ModelTurn:
        failures: list[str] = []
        for index in self._order():
            model = self.models[index]
            try:
                turn = model.complete(messages, tools, sink)
            except ModelUnavailable as exc:
                if not _passes_on(exc):
                    raise
                failures.append(f"{model.model}: {exc.reason}")
                if index == 0:
                    with self._lock:
                        self._primary_failed_at = self.clock()
                if sink is not None:
                    sink.reset()
                continue
            self._answered(index, failures)
            return turn
        raise ModelUnavailable("no model could answer (" + "; ".join(failures) + ")")

    def _order(self) -> list[int]:
        """The model in use first, unless it is time to try the configured one again; the rest after."""
        with self._lock:
            current = self._current
            if current and self.clock() - self._primary_failed_at >= self.recheck_s:
                current = 0
        return [current, *(i for i in range(len(self.models)) if i != current)]

    def _answered(self, index: int, failures: list[str]) -> None:
        with self._lock:
            if index == self._current:
                return
            was, self._current = self.models[self._current].model, index
        if index == 0:
            log.info("model %s answers again; %s no longer stands in for it", self.primary.model, was)
        else:
            log.warning(
                "model %s is unavailable (%s); %s answers until it is back",
                self.primary.model,
                "; ".join(failures),
                self.models[index].model,
            )
