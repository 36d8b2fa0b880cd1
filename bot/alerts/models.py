"""What an alert is once it is inside opsbot, whichever pager sent it.

Alertmanager and PagerDuty describe alerts differently; everything downstream (runbook selection,
alert threads, the model) sees one `Alert`. Every field of it came from an unauthenticated-looking
stranger as far as the rest of the bot is concerned: labels become typed runbook parameters only
after the runbook validates them, annotations are text to show, never to run. Sizes are capped
here, once, so no hostile or merely runaway payload can exhaust memory or Slack's block limits
further down.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Strict, ValidationError, model_validator

from ...tools.inert import inert

MAX_LABELS = 64
MAX_ANNOTATIONS = 32
MAX_NAME_CHARS = 128
# Label values feed runbook parameters: an overlong one is dropped, never cut, because a cut
# hostname or path is a different (and possibly valid) value.
MAX_LABEL_VALUE_CHARS = 512
# Annotations are prose for people and the model; cutting them loses detail, not meaning. Slack
# caps a section's text at 3000 characters, so one annotation always fits in one block.
MAX_ANNOTATION_CHARS = 2000
MAX_TITLE_CHARS = 200
MAX_URL_CHARS = 2000
MAX_ERROR_CHARS = 500
_CUT_MARKER_CHARS = 40


class BadPayload(ValueError):
    """A webhook body opsbot cannot take: the message says what is wrong, for the sender's logs."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _text_only(value: object) -> object:
    # Lax datetime parsing would also take numbers and bytes; both pagers send ISO 8601 strings,
    # and anything else is a malformed payload, not a timestamp to guess at.
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 timestamp string")
    return value


# Payload models are strict (no "1" -> 1 coercion), except that timestamps arrive as strings.
Timestamp = Annotated[datetime, Strict(False), BeforeValidator(_text_only)]


class Alert(BaseModel):
    """One alert notification, normalised: built by this package's parsers, or read back from their JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["alertmanager", "pagerduty"]
    status: Literal["firing", "resolved"]
    key: str
    delivery: str
    labels: dict[str, str]
    annotations: dict[str, str]
    title: str
    url: str | None = None
    starts_at: datetime | None = None
    group: str = ""
    """The alerts that are one message in Slack: Alertmanager's group (a digest of its groupKey), a
    PagerDuty incident. Empty: the alert is a group of its own."""
    group_labels: dict[str, str] = {}
    """The labels the group is made by (Alertmanager's groupLabels: what `group_by` names)."""
    notes: tuple[str, ...] = ()
    """What opsbot changed or left out of the payload (caps, truncated groups), to say aloud."""

    @model_validator(mode="before")
    @classmethod
    def _cap(cls, data: Any) -> Any:
        # A validator rather than a factory, so no code path can build an uncapped Alert.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        notes = list(data.get("notes") or ())
        labels = data.get("labels")
        if isinstance(labels, Mapping) and all(isinstance(v, str) for v in labels.values()):
            data["labels"] = _cap_pairs(labels, "label", MAX_LABELS, MAX_LABEL_VALUE_CHARS, notes, cut=False)
        grouped = data.get("group_labels")
        if isinstance(grouped, Mapping) and all(isinstance(v, str) for v in grouped.values()):
            data["group_labels"] = _cap_pairs(
                grouped, "group label", MAX_LABELS, MAX_LABEL_VALUE_CHARS, notes, cut=False
            )
        annotations = data.get("annotations")
        if isinstance(annotations, Mapping) and all(isinstance(v, str) for v in annotations.values()):
            data["annotations"] = _cap_pairs(
                annotations, "annotation", MAX_ANNOTATIONS, MAX_ANNOTATION_CHARS, notes, cut=True
            )
        title = data.get("title")
        if isinstance(title, str) and len(title) > MAX_TITLE_CHARS:
            data["title"] = title[: MAX_TITLE_CHARS - 1] + "…"
            notes.append(f"title cut to {MAX_TITLE_CHARS} characters")
        url = data.get("url")
        if isinstance(url, str):
            data["url"] = _safe_url(url, notes)
        data["notes"] = tuple(notes)
        return data

    @property
    def group_id(self) -> str:
        return self.group or self.key


def _cap_pairs(
    pairs: Mapping[Any, str], what: str, max_count: int, max_chars: int, notes: list[str], *, cut: bool
) -> dict[str, str]:
    kept: dict[str, str] = {}
    bad_names = over_count = 0
    too_long: list[str] = []
    for name, value in pairs.items():
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            bad_names += 1
            continue
        if len(kept) >= max_count:
            over_count += 1
            continue
        if len(value) > max_chars:
            too_long.append(name)
            if not cut:
                continue
            # The marker fits inside the cap, so a capped alert re-validated (e.g. read back from
            # a queue as JSON) comes out unchanged instead of being cut and noted again.
            keep = max_chars - _CUT_MARKER_CHARS
            value = value[:keep] + f"… [cut {len(value) - keep} characters]"
        kept[name] = value
    if too_long:
        # Names only, a few, each short: a note must not become the next thing to cap.
        named = ", ".join(repr(name[:40]) for name in too_long[:5]) + (" and more" if len(too_long) > 5 else "")
        done = f"cut to {max_chars} characters" if cut else f"dropped: values longer than {max_chars} characters"
        notes.append(f"{what}(s) {named} {done}")
    if bad_names:
        notes.append(f"{bad_names} {what}(s) dropped: empty name or longer than {MAX_NAME_CHARS} characters")
    if over_count:
        notes.append(f"{over_count} {what}(s) dropped: at most {max_count} are kept")
    return kept


def _safe_url(url: str, notes: list[str]) -> str | None:
    if not url:
        return None
    # Only links a person can safely click: no javascript:, data: or slack:// from a payload.
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https") or len(url) > MAX_URL_CHARS:
        notes.append("link left out: not an http(s) URL of reasonable length")
        return None
    return url


def describe(error: ValidationError, what: str) -> str:
    """A short, input-free account of a validation failure: field paths and reasons only, since
    echoing hostile input back (or into logs) is what caps exist to prevent."""
    parts = []
    for item in error.errors(include_input=False, include_url=False, include_context=False)[:3]:
        # Paths can hold the payload's own keys (label names): short and printable only, since
        # this text goes back to the sender and into our logs.
        where = ".".join(inert(str(part)[:40]) for part in item["loc"]) or "body"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(parts)
    text = f"{what}: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
    return text[:MAX_ERROR_CHARS]
