"""Whether opsbot's model can be used, found out before anyone asks: `serve` checks at startup and
/healthz asks again (at most every `ttl_s`), so a missing model, a wrong address or a model name
the server does not serve is read in the operator's log and /healthz, not from the first person
who asks in Slack. The check itself is ModelClient.check (GET /models through the openai client)."""

from __future__ import annotations

import difflib
import logging
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from ..faults import SET_A_MODEL

log = logging.getLogger("opsbot.llm")

# How long a check may take at startup (and in the background afterwards): serving waits for it.
CHECK_TIMEOUT_S = 5.0
# How long an answer stands before /healthz has it asked again.
RECHECK_S = 30.0


class ModelState(StrEnum):
    ok = "ok"
    not_configured = "not_configured"
    unreachable = "unreachable"
    key_rejected = "key_rejected"
    unknown_model = "unknown_model"
    unverified = "unverified"  # reachable, but it lists no models (no /models): the name is not checked


class ModelHealth(BaseModel):
    model_config = ConfigDict(frozen=True)

    state: ModelState
    said: str = Field(description="what the check found, the address included: for the log")
    fix: str = Field(default="", description="what to set or do, without addresses: for /healthz too")

    def line(self) -> str:
        """The log's one line about it."""
        return f"{_LEADS[self.state]}: {self.detail()}"

    def detail(self) -> str:
        """What was found and what to do about it."""
        return self.said + (f"; {self.fix}" if self.fix else "")

    @property
    def usable(self) -> bool:
        """Whether questions can be asked (`unverified`: nothing says they cannot)."""
        return self.state in _FINE

    def public(self) -> dict[str, str]:
        """What /healthz says: the state and what to set, never the address (the port /healthz is
        served on is Slack's too, so it may face the internet)."""
        return {"state": self.state.value, "fix": self.fix} if self.fix else {"state": self.state.value}


_LEADS = {
    ModelState.ok: "model ok",
    ModelState.not_configured: "no model",
    ModelState.unreachable: "model unreachable",
    ModelState.key_rejected: "model key rejected",
    ModelState.unknown_model: "unknown model",
    ModelState.unverified: "model not verified",
}

# Names listed when the model is not among them; a server with hundreds (OpenAI's API) gets the
# closest ones first.
SHOWN_NAMES = 8


class Served(NamedTuple):
    shown: str  # the names, closest first, the rest counted
    closest: str | None  # the likeliest meant, if any is close


def served_names(model: str, served: list[str]) -> Served:
    """What a server serves, said for someone who asked for `model`: near spellings first, then
    names holding `model` (a tag or an owner added, `llama3.1:8b`)."""
    close = difflib.get_close_matches(model, served, n=3, cutoff=0.6)
    close += [name for name in served if model.lower() in name.lower() and name not in close]
    ordered = [*close, *sorted(name for name in served if name not in close)]
    more = len(ordered) - SHOWN_NAMES
    shown = ", ".join(ordered[:SHOWN_NAMES]) + (f" and {more} more" if more > 0 else "")
    return Served(shown, close[0] if close else None)


# Questions can be asked: logged as information, the others as warnings.
_FINE = frozenset({ModelState.ok, ModelState.unverified})

NOT_CONFIGURED = ModelHealth(
    state=ModelState.not_configured,
    said="none is configured, so questions are refused (direct commands work)",
    fix=SET_A_MODEL,
)


class ModelWatch:
    """The model's last known health. `check` asks now; `current` answers at once with what is
    known and, when that is older than `ttl_s`, has it asked again on a thread of its own (a
    health probe must not wait for a model server that does not answer). Each change is logged
    once: a warning while the model cannot be used, an informational line when it can."""

    def __init__(
        self, probe: Callable[[], ModelHealth], *, ttl_s: float = RECHECK_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.probe = probe
        self.ttl_s = ttl_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: ModelHealth | None = None
        self._at = 0.0
        self._asking = False

    def check(self) -> ModelHealth:
        try:
            health = self.probe()
        except BaseException:
            with self._lock:
                self._asking = False
            raise
        with self._lock:
            if self._last is None or health.state is not self._last.state:
                # Under the lock: whoever reads the new state finds its line logged.
                log.log(logging.INFO if health.usable else logging.WARNING, "%s", health.line())
            self._last, self._at, self._asking = health, self.clock(), False
        return health

    def current(self) -> ModelHealth:
        with self._lock:
            last = self._last
            stale = last is not None and self.clock() - self._at >= self.ttl_s and not self._asking
            if stale:
                self._asking = True
        if last is None:
            return self.check()
        if stale:
            threading.Thread(target=self.check, name="opsbot-model-check", daemon=True).start()
        return last
