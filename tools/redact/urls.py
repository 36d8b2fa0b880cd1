"""Credentials inside URLs: a password in the userinfo (`postgres://app:p@ss@db`) and a token as
the user name (a Sentry DSN, `https://<token>@github.com`). The signature and credential of a
presigned URL (`X-Amz-Signature=`, `sig=`) are query parameters named for secrets: tools/redact/pairs.py."""

from __future__ import annotations

import re

from .markers import Kind, harmless, marker

NEEDLES = ("://",)

# Greedy up to the authority's end, then back to its last `@`: passwords are often not
# percent-encoded (`postgres://app:p@ss!@db`). Quotes end it so a JSON line is not swallowed.
_USERINFO = re.compile(r"://(?P<user>[^/\s:@\"'\\]*):(?P<password>[^/\s\"'\\]*)@")
# A password holding `/` (`redis://:pa/ss@cache`): the authority is then only known by the `@`
# and a host after it. A port and a path (`https://host:8080/a/@b`) are not a password.
# Bounded, so a text of many `://a:b/` without an `@` costs a short look at each, not a scan to the end.
_SLASHED = re.compile(
    r"://(?P<user>[^/\s:@\"'\\]{0,256}+):(?P<password>[^/\s\"'\\@]{0,256}+/[^\s\"'\\@]{0,256}+)@(?=[\w.-])"
)
_PORT = re.compile(r"\d{1,5}(?:/|$)")
# No password, but a user name that is a token: Sentry DSNs (`https://<32 hex>@o1.ingest.sentry.io/5`),
# `https://<token>@github.com/org/repo.git`. A person's name holds no digit run like a token's.
_TOKEN_USER = re.compile(r"://(?P<user>[A-Za-z0-9_-]{20,}+)@")


def redact_urls(text: str) -> str:
    text = _USERINFO.sub(_password, text)
    text = _SLASHED.sub(_slashed_password, text)
    return _TOKEN_USER.sub(_token_user, text)


def _password(match: re.Match[str]) -> str:
    if harmless(match.group("password")):
        return match.group(0)
    return f"://{match.group('user')}:{marker(Kind.url_credentials)}@"


def _slashed_password(match: re.Match[str]) -> str:
    password = match.group("password")
    if harmless(password) or _PORT.match(password):
        return match.group(0)
    return f"://{match.group('user')}:{marker(Kind.url_credentials)}@"


def _token_user(match: re.Match[str]) -> str:
    user = match.group("user")
    if sum(c.isdigit() for c in user) < 4 or not any(c.isalpha() for c in user):
        return match.group(0)
    return f"://{marker(Kind.url_credentials)}@"
