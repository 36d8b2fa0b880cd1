"""Whether the configured endpoint answers and serves the configured model, asked without a
completion (GET /models): what `opsbot check-config --model` reports.

A server that cannot be reached or refuses the key is told apart from one that answers but
serves the model under another name (`llama3.1` configured, `llama3.1:8b` served), which is
said with the names it does serve and the closest of them. A server that does not list its
models (some proxies) is neither: the name cannot be confirmed, and a completion may still work.
"""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import NamedTuple

from .client import ModelClient
from .turns import ModelUnavailable

# Names listed in a message; a server with hundreds (OpenAI's API) gets the closest ones first.
SHOWN_NAMES = 8


class Verdict(StrEnum):
    served = "served"
    not_served = "not_served"
    unreachable = "unreachable"
    unlisted = "unlisted"  # the server does not list its models: nothing to compare with


class ModelCheck(NamedTuple):
    verdict: Verdict
    message: str


def check_model(client: ModelClient) -> ModelCheck:
    where = client.base_url or "the OpenAI API"
    try:
        served = client.served_models()
    except ModelUnavailable as exc:
        return ModelCheck(Verdict.unreachable, str(exc))
    if served is None:
        return ModelCheck(
            Verdict.unlisted,
            f"{where} does not list its models (GET /models: HTTP 404), so model {client.model!r} cannot be confirmed",
        )
    if client.model in served:
        return ModelCheck(Verdict.served, f"{where} serves model {client.model!r}")
    return ModelCheck(Verdict.not_served, _not_served(where, client.model, served))


def _not_served(where: str, model: str, served: list[str]) -> str:
    if not served:
        return f"{where} answers but serves no model (its model list is empty); load one, then set OPSBOT_MODEL to it"
    # Near spellings first, then names that contain the one configured (a tag or an owner added).
    close = difflib.get_close_matches(model, served, n=3, cutoff=0.6)
    close += [name for name in served if model.lower() in name.lower() and name not in close]
    ordered = [*close, *sorted(name for name in served if name not in close)]
    more = len(ordered) - SHOWN_NAMES
    shown = ", ".join(ordered[:SHOWN_NAMES]) + (f" and {more} more" if more > 0 else "")
    guess = f" — did you mean '{close[0]}'?" if close else ""
    return f"{where} does not serve model {model!r}; it serves {shown}{guess}"
