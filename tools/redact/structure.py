"""Parsed data (a config file, a tool's result): what only the structure shows.

The value under a key that names a secret is hidden whatever its shape (`{"password": 1234}`); a
Kubernetes Secret's `data` and `stringData` are hidden whole; a dict key that is itself a secret
(`tokens: {<token>: alice}`) is redacted like any text.
"""

from __future__ import annotations

from typing import Any

from .headers import authorization_value
from .keys import (
    AUTHORIZATION_KEYS,
    STRUCTURE_ONLY_KEYS,
    counts,
    pair_kind,
    secret_key,
    shaped_key,
    vendor_key,
)
from .markers import Kind, harmless, marker, markers_only
from .shapes import SHAPES
from .text import redact_text
from .vendors import key_shaped, vendor_credential


def redact(value: Any) -> Any:
    """Redact every string inside `value` (nested dicts and lists, dict keys included), and the
    value under every dict key that names a secret (`redact_structure`)."""
    return _walk(value, texts=True)


def redact_structure(value: Any) -> Any:
    """Redact the value under every dict key that names a secret, at any depth, whatever the
    value's shape (`{"password": 1234}`); strings elsewhere are left as they are.

    Under a secret key a scalar becomes a marker, a list has each item judged the same way, and a
    dict is walked (its own keys decide: `secretKeyRef: {name: db, key: password}` names a secret,
    it does not hold one). Booleans and null stay: they cannot authenticate."""
    return _walk(value, texts=False)


def _walk(value: Any, texts: bool) -> Any:
    if isinstance(value, str):
        return redact_text(value) if texts else value
    if isinstance(value, dict):
        return _walk_dict(value, texts)
    if isinstance(value, list | tuple):
        return [_walk(item, texts) for item in value]
    return value


def _walk_dict(mapping: dict[Any, Any], texts: bool) -> dict[Any, Any]:
    # With texts, every decision is made on keys and names as they will be shown: a token used as
    # a key could otherwise spell `secret` and hide the value under it in one file and not in
    # another that differs only in that token, which would tell the two apart.
    shown = {key: redact_text(key) if texts and isinstance(key, str) else key for key in mapping}
    named = _pair_name(mapping, texts)
    secret_object = _kubernetes_secret(mapping)
    out: dict[Any, Any] = {}
    for key, item in mapping.items():
        if secret_object and key in ("data", "stringData") and isinstance(item, dict):
            walked: Any = {}
            for data_key, value in item.items():
                shown_data_key = redact_text(data_key) if texts and isinstance(data_key, str) else data_key
                walked[_unique(walked, shown_data_key)] = _secret_data(value)
        else:
            key_name = named if named is not None and key in ("value", "Value") else shown[key]
            walked = _under_key(key_name, item, texts) if isinstance(key_name, str) else _walk(item, texts)
        out[_unique(out, shown[key])] = walked
    return out


def _unique(out: dict[Any, Any], key: Any) -> Any:
    """`key`, or `key (2)`...: two secret keys redact to one marker, and neither may be lost (nor
    the order of the items, by which a caller pairs them with the original)."""
    if key not in out:
        return key
    number = 2
    while f"{key} ({number})" in out:
        number += 1
    return f"{key} ({number})"


def _pair_name(mapping: dict[Any, Any], texts: bool) -> str | None:
    """`{"name": "DB_PASSWORD", "value": "..."}` (Kubernetes env, ECS): the name `value` is under."""
    if "value" not in mapping and "Value" not in mapping:
        return None
    for field in ("name", "Name", "key", "Key"):
        name = mapping.get(field)
        if isinstance(name, str):
            return redact_text(name) if texts else name
    return None


def _kubernetes_secret(mapping: dict[Any, Any]) -> bool:
    return mapping.get("kind") == "Secret"


def _secret_data(value: Any) -> Any:
    """A value of a Secret's data, hidden whatever it looks like: a path, `true` or `${X}` there
    is the secret itself, nothing refers to it. Only what holds nothing stays."""
    if value is None or (isinstance(value, str) and markers_only(value)):
        return value
    return marker(Kind.kubernetes_secret)


def _under_key(key: str, value: Any, texts: bool) -> Any:
    if isinstance(value, str) and key.lower() in AUTHORIZATION_KEYS:
        return redact_text(authorization_value(value)) if texts else authorization_value(value)
    if isinstance(value, str) and _vendor_value(key, value):
        return marker(Kind.vendor_key)
    if not (secret_key(key) or key.lower() in STRUCTURE_ONLY_KEYS) or isinstance(value, bool) or value is None:
        return _walk(value, texts)
    if isinstance(value, list | tuple):
        return [_under_key(key, item, texts) for item in value]
    if isinstance(value, str | int | float):
        text = str(value)
        if harmless(text) or counts(key, text):
            return _walk(value, texts)
        return marker(_value_kind(key, text))
    return _walk(value, texts)


def _vendor_value(key: str, value: str) -> bool:
    """A vendor's key under its vendor's name (`DATADOG_APP`) or a name it shares with settings
    (`routing_key`), judged as `key = value` text is (tools/redact/pairs.py)."""
    if secret_key(key):
        return False
    return (vendor_key(key) and vendor_credential(value)) or (shaped_key(key) and key_shaped(value))


def _value_kind(key: str, value: str) -> Kind:
    if "PRIVATE KEY-----" in value:
        return Kind.pem
    for shape in SHAPES:
        if shape.apply(value) != value:
            return shape.kind
    return pair_kind(key)
