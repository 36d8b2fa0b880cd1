"""A silence asked for, as a person approves it, and its creation once they have.

The model's request is checked against the policy before anyone is asked (`silence_request`):
the Alertmanager exists and the asker may use it, every matcher is well formed, at least one is
`name=value` with a value (a silence of regular expressions, negations or empty values alone could
mute everything), and the duration is at most the source's `silences.max_duration_s`. The request
is bound to what decides what gets muted (`SilenceRequest.digest`: the source's URL, the matchers,
the duration, the comment), so a policy change between the request and the approval refuses it.
`create_silence` POSTs /api/v2/silences and is called only by the approvals service, once a
decision was claimed: the model cannot create a silence itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import Policy, Principal
from ..base import ErrorType, ToolResult
from ..durations import duration_seconds, duration_text
from .args import CreateSilenceArgs
from .client import Client
from .matchers import Matcher, Op, parse_matchers
from .query import client_for

MATCH_ALL_HINT = (
    "name at least one label with = and a value (alertname=..., instance=...), so the silence mutes only these alerts"
)


class SilenceRequest(BaseModel):
    """A silence exactly as it would be created, but for when it starts (when it is approved)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="the Alertmanager, by its name in the policy")
    url: str = Field(description="its URL when the silence was asked for")
    matchers: tuple[Matcher, ...]
    duration_s: float
    comment: str

    def digest(self) -> str:
        """A hash of everything that decides what gets muted, and where."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def shown(self) -> str:
        """The silence in one line, for people."""
        matchers = ", ".join(m.shown() for m in self.matchers)
        return (
            f"silence {{{matchers}}} for {duration_text(self.duration_s)} on Alertmanager {self.source}: {self.comment}"
        )


def silence_request(
    policy: Policy, args: CreateSilenceArgs, principal: Principal | None
) -> SilenceRequest | ToolResult:
    """The silence the model asked for, or why it may not be asked for."""
    client = client_for(policy, args.source, principal, None)
    if isinstance(client, ToolResult):
        return client
    matchers = parse_matchers(args.matchers)
    if isinstance(matchers, ToolResult):
        return matchers
    seconds = duration_seconds(args.duration)
    if seconds is None or seconds <= 0:
        return ToolResult.failure(
            ErrorType.invalid_args, f"duration {args.duration!r} is not a length of time", hint="give 30m, 2h or 1d"
        )
    request = SilenceRequest(
        source=args.source,
        url=client.source.url,
        matchers=tuple(matchers),
        duration_s=seconds,
        comment=args.comment,
    )
    refusal = silence_refusal(policy, request, principal)
    return request if refusal is None else refusal


def silence_refusal(policy: Policy, request: SilenceRequest, principal: Principal | None) -> ToolResult | None:
    """Why `principal` may not have `request` created under `policy` as it is now, or None."""
    client = client_for(policy, request.source, principal, None)
    if isinstance(client, ToolResult):
        return client
    if client.source.url != request.url:
        return ToolResult.failure(
            ErrorType.denied,
            f"Alertmanager {request.source} moved to another URL since the silence was asked for; nothing was created",
            hint="ask for the silence again",
        )
    if not any(m.op is Op.equal and m.value for m in request.matchers):
        shown = ", ".join(m.shown() for m in request.matchers)
        return ToolResult.failure(
            ErrorType.invalid_args, f"the matchers {shown} could match every alert", hint=MATCH_ALL_HINT
        )
    longest = client.source.silences.max_duration_s
    if request.duration_s > longest:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"a silence on Alertmanager {request.source} lasts at most {duration_text(longest)}; "
            f"{duration_text(request.duration_s)} was asked",
            hint=f"ask for {duration_text(longest)} or less, and again later if it is still needed",
        )
    return None


def create_silence(policy: Policy, request: SilenceRequest, created_by: str, now: datetime) -> ToolResult:
    """POST the silence, starting `now`: its id, or why it was not created."""
    source = policy.alertmanagers[request.source]
    body = {
        "matchers": [m.api() for m in request.matchers],
        "startsAt": now.isoformat(),
        "endsAt": (now + timedelta(seconds=request.duration_s)).isoformat(),
        "createdBy": created_by,
        "comment": request.comment,
    }
    answer = Client(request.source, source).post("silences", body)
    if isinstance(answer, ToolResult):
        return answer
    silence_id = answer.get("silenceID") if isinstance(answer, dict) else None
    if not silence_id:
        return ToolResult.failure(
            ErrorType.failed, f"Alertmanager {request.source} answered without a silence id: {str(answer)[:200]}"
        )
    return ToolResult.success(
        {
            "silence_id": silence_id,
            "source": request.source,
            "matchers": [m.shown() for m in request.matchers],
            "ends_at": body["endsAt"],
            "created_by": created_by,
            "comment": request.comment,
        }
    )


def show_silence(data: Mapping[str, Any]) -> str:
    """A created silence, for people."""
    matchers = ", ".join(data["matchers"])
    return (
        f"silence {data['silence_id']} created on Alertmanager {data['source']}: {{{matchers}}} "
        f"until {data['ends_at']} ({data['comment']})"
    )
