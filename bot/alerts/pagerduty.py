"""PagerDuty v3 webhooks: the signature check and the incident events that become `Alert`s.

PagerDuty signs the raw body with HMAC-SHA256 once per subscription secret and sends every
signature in `X-PagerDuty-Signature`, so secrets can be rotated without downtime: any match with
any secret we hold is enough. Nothing with a timestamp is signed, so replays are stopped by
deduplicating on the event id (and `X-Webhook-Id` in the hook), not here.

Only the events that start or end work are alerts: triggered and reopened (firing), resolved.
Acknowledgements, notes, priority changes and the rest are accepted and ignored, so PagerDuty does
not count them as failed deliveries and disable the subscription.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .models import Alert, BadPayload, Timestamp, describe

FIRING_EVENTS = frozenset({"incident.triggered", "incident.reopened"})
RESOLVED_EVENTS = frozenset({"incident.resolved"})
# A header is bounded by the HTTP server, but each candidate costs an HMAC compare per secret.
MAX_SIGNATURES = 10


def verify_signature(body: bytes, header: str | None, secrets: Sequence[str]) -> bool:
    """True when any `v1=` signature in `header` is HMAC-SHA256(secret, body) for any secret."""
    if not header:
        return False
    candidates = [
        part.strip()[3:].lower().encode("utf-8", "replace")
        for part in header.split(",", MAX_SIGNATURES)[:MAX_SIGNATURES]
        if part.strip().startswith("v1=")
    ]
    valid = False
    for secret in secrets:
        # An empty key is a forgeable key: treat it as no secret at all.
        if not secret:
            continue
        expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest().encode()
        for candidate in candidates:
            # No early exit: how long this takes must not say which candidate came close.
            valid |= hmac.compare_digest(expected, candidate)
    return valid


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Reference(_Strict):
    id: str | None = None
    summary: str | None = None


class _Incident(_Strict):
    id: str = Field(min_length=1, max_length=128)
    type: Literal["incident"]
    number: int | None = None
    title: str
    description: str | None = None
    html_url: str | None = None
    created_at: Timestamp | None = None
    service: _Reference | None = None
    priority: _Reference | None = None
    urgency: str | None = None


class _Event(_Strict):
    id: str = Field(min_length=1, max_length=128)
    event_type: str = Field(min_length=1, max_length=128)
    resource_type: str
    occurred_at: Timestamp
    agent: dict[str, Any] | None = None
    client: dict[str, Any] | None = None
    data: dict[str, Any]


class _Envelope(_Strict):
    event: _Event


def parse_pagerduty(body: bytes) -> list[Alert]:
    """The alert in one v3 webhook (none for event types opsbot does not act on), or `BadPayload`."""
    try:
        document = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as error:
        raise BadPayload(f"body is not valid JSON: {str(error)[:200]}") from None
    try:
        event = _Envelope.model_validate(document).event
    except ValidationError as error:
        raise BadPayload(describe(error, "malformed PagerDuty v3 webhook")) from None
    if event.event_type in FIRING_EVENTS:
        status: Literal["firing", "resolved"] = "firing"
    elif event.event_type in RESOLVED_EVENTS:
        status = "resolved"
    else:
        return []
    try:
        incident = _Incident.model_validate(event.data)
    except ValidationError as error:
        raise BadPayload(describe(error, f"malformed PagerDuty {event.event_type} event data")) from None

    labels = {
        "service": incident.service.summary if incident.service else None,
        "urgency": incident.urgency,
        "priority": incident.priority.summary if incident.priority else None,
        "incident": str(incident.number) if incident.number is not None else incident.id,
        "event_type": event.event_type,
    }
    annotations = {"title": incident.title, "description": incident.description}
    return [
        Alert(
            source="pagerduty",
            status=status,
            key=f"pagerduty:{incident.id}",
            delivery=f"pagerduty:event:{event.id}",
            group=f"pagerduty:{incident.id}",  # one incident, one message
            labels={name: value for name, value in labels.items() if value},
            annotations={name: value for name, value in annotations.items() if value},
            title=incident.title or f"PagerDuty incident {labels['incident']}",
            url=incident.html_url,
            starts_at=incident.created_at or event.occurred_at,
        )
    ]
