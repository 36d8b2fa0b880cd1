"""Alertmanager's webhook (payload version 4) turned into `Alert`s, one per entry of `alerts`.

Alertmanager re-sends a whole group every `repeat_interval` and sends resolved alerts too, so an
alert's identity (`key`: group + fingerprint) and a notification's identity (`delivery`: the same
plus status and `startsAt`) are kept apart: a re-send repeats the delivery and is dropped by the
hook, a new firing after a resolve has a new `startsAt` and is new work.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .models import Alert, BadPayload, Timestamp, describe

SUPPORTED_VERSION = "4"
# 1 MB of body holds ~10k minimal alerts; past this many the rest are left out, said aloud, as
# Alertmanager itself does with truncatedAlerts.
MAX_ALERTS = 1000


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _AmAlert(_Strict):
    status: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: Timestamp = Field(alias="startsAt")
    generator_url: str = Field(default="", alias="generatorURL")
    fingerprint: str = Field(min_length=1, max_length=256)


class _AmPayload(_Strict):
    version: str
    group_key: str = Field(alias="groupKey", min_length=1)
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts", ge=0)
    status: Literal["firing", "resolved"]
    receiver: str = ""
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL")
    alerts: list[_AmAlert]


def parse_alertmanager(body: bytes) -> list[Alert]:
    """Every alert of one webhook notification, or `BadPayload` saying what is wrong with it."""
    try:
        document = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as error:
        raise BadPayload(f"body is not valid JSON: {str(error)[:200]}") from None
    if not isinstance(document, dict):
        raise BadPayload("Alertmanager payload must be a JSON object")
    # Checked before the shape, so a future version fails as "wrong version", not as 20 field errors.
    version = document.get("version")
    if version != SUPPORTED_VERSION:
        shown = repr(version)[:20] if version is not None else "missing"
        raise BadPayload(f"unsupported Alertmanager webhook version {shown}: expected '{SUPPORTED_VERSION}'")
    try:
        payload = _AmPayload.model_validate(document)
    except ValidationError as error:
        raise BadPayload(describe(error, "malformed Alertmanager payload")) from None

    notes: list[str] = []
    if payload.truncated_alerts:
        notes.append(f"Alertmanager left {payload.truncated_alerts} more alert(s) of this group out (max_alerts)")
    if len(payload.alerts) > MAX_ALERTS:
        notes.append(f"{len(payload.alerts) - MAX_ALERTS} more alert(s) of this group left out by opsbot")
    return [_alert(payload, entry, tuple(notes)) for entry in payload.alerts[:MAX_ALERTS]]


def _alert(payload: _AmPayload, entry: _AmAlert, notes: tuple[str, ...]) -> Alert:
    starts = entry.starts_at.isoformat()
    group_key = payload.group_key
    return Alert(
        source="alertmanager",
        status=entry.status,
        key="alertmanager:" + _digest(group_key, entry.fingerprint),
        delivery="alertmanager:" + _digest(group_key, entry.fingerprint, entry.status, starts),
        group="alertmanager:" + _digest(group_key),
        group_labels=payload.group_labels,
        labels=entry.labels,
        annotations=entry.annotations,
        title=entry.labels.get("alertname") or entry.annotations.get("summary") or "Alertmanager alert",
        url=entry.generator_url or None,
        starts_at=entry.starts_at,
        notes=notes,
    )


def _digest(*parts: str) -> str:
    # groupKey embeds the route's matchers and can run to kilobytes; a digest keeps ids (and the
    # Redis keys built from them) short. Length prefixes keep ("a:b", "c") and ("a", "b:c") apart.
    joined = "\0".join(f"{len(part)}:{part}" for part in parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:32]
