"""`Authorization` headers in any spelling a log or a dump gives them, and `Bearer <token>` alone."""

from __future__ import annotations

import re

from .find import sub_at
from .markers import MARKER, Kind, harmless, marker

NEEDLES = ("authorization", "bearer")

_HEADER = re.compile(r"(?i)(?<!\w)authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<value>[^\r\n\"'\\]*)")
_SCHEME = re.compile(
    r"(?i)(?P<scheme>bearer|basic|token|digest|negotiate|ntlm|api-?key|sso-key|splunk|dsn|oauth|mac|hoba"
    r"|aws4-hmac-sha256|hmac-sha256)[ \t]+(?P<rest>.*)",
    re.S,
)
# Schemes whose credential is a list of parameters, not one token. Their quoted parameters
# (`Digest username="bob", response="6629fa..."`) would end the header pattern's value, so they
# have a pattern of their own that walks `name=value` and `name="value"` pairs.
_PARAMETER_SCHEMES = frozenset({"digest", "oauth", "mac", "hoba", "aws4-hmac-sha256", "hmac-sha256"})
_PARAMETERS = re.compile(
    r"(?i)(?<!\w)authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    rf"(?:{'|'.join(sorted(_PARAMETER_SCHEMES))})[ \t]+"
    r"(?P<parameters>[\w-]+=(?:\"[^\"\r\n]*\"|[^\s,\"']*)(?:[ \t]*,[ \t]*[\w-]+=(?:\"[^\"\r\n]*\"|[^\s,\"']*))*+)"
)
_FIRST_WORD = re.compile(r"\s*(?P<word>\S+)(?P<tail>.*)", re.S)
# `Bearer <token>` outside a header (a log line quoting a request). A digit is required so that
# prose ("bearer of bad news") is left alone.
_BEARER = re.compile(r"(?<![\w-])(?:[Bb]earer|BEARER)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}=*)")
_AUTHORIZATION = marker(Kind.authorization)


def redact_headers(text: str) -> str:
    text = sub_at("authorization", _PARAMETERS, _parameters, text)
    text = sub_at("authorization", _HEADER, _header, text)
    return sub_at("bearer", _BEARER, _bearer, text)


def authorization_value(value: str) -> str:
    """A header value with its credential hidden and its scheme kept (`Basic [REDACTED:...]`)."""
    scheme = _SCHEME.match(value)
    if scheme is not None:
        head, rest = value[: scheme.start("rest")], scheme.group("rest")
        if scheme.group("scheme").lower() in _PARAMETER_SCHEMES:
            if MARKER.match(rest):  # redacted by `_PARAMETERS`; what follows is not the header's
                return value
            credential, tail = rest, ""
        else:
            first = _FIRST_WORD.match(rest)
            if first is None:
                return value
            credential, tail = first.group("word"), first.group("tail")
        if harmless(credential):
            return value
        return f"{head}{_AUTHORIZATION}{tail}"
    # No scheme: a raw key (`Authorization: lin_api_...`) or prose (`Authorization: required`).
    first = _FIRST_WORD.match(value)
    if first is None:
        return value
    word = first.group("word")
    looks_random = (len(word) >= 8 and any(c.isdigit() for c in word)) or len(word) >= 24
    if not looks_random or harmless(word):
        return value
    return value[: first.start("word")] + _AUTHORIZATION + first.group("tail")


def _parameters(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("parameters") - match.start()] + _AUTHORIZATION


def _header(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("value") - match.start()] + authorization_value(match.group("value"))


def _bearer(match: re.Match[str]) -> str:
    token = match.group("token")
    if not any(c.isdigit() for c in token):
        return match.group(0)
    return match.group(0)[: match.start("token") - match.start()] + _AUTHORIZATION
