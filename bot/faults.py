"""A part opsbot depends on (its model, its Redis) that failed: whether asking again can help,
and the details only operators should read.

`lasting` is the line between "ask again in a minute" (a timeout, a 5xx, a rate limit, a Redis
failover) and "an operator has to fix something" (an address where nothing listens, a host that
does not resolve, a key or model name refused). Who decides it: bot/llm/client.py for the model,
bot/redis/client.py `lasting` for Redis; the words people read are bot/agent/prompts.py's, in full
for the terminal (the operator's own) and plain for a Slack channel, where the details would be
read by everyone in it."""

from __future__ import annotations

import socket
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

# What to set when no model is configured: for the terminal, the log and /healthz alike.
SET_A_MODEL = "set OPENAI_API_KEY, or OPENAI_BASE_URL (and OPSBOT_MODEL) for a local OpenAI-compatible server"


class Part(StrEnum):
    model = "model"
    redis = "redis"


class Fault(BaseModel):
    model_config = ConfigDict(frozen=True)

    part: Part
    lasting: bool = Field(description="a setting or a server needs fixing: asking again will not help until then")
    detail: str = Field(description="what failed, where, and what to set: for operators (the terminal, the log)")


def nobody_there(exc: BaseException) -> str | None:
    """Connection refused or unknown host, when that is what `exc` comes down to (clients wrap
    the socket's error in their own, one or more times), else None."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes is short; a cycle in one must not hang the caller
        if seen is None:
            return None
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "unknown host"
        seen = seen.__cause__ or seen.__context__
    return None
