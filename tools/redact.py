"""Secret redaction for any text that leaves a tool: to the model, to a chat, to a log.

A redaction is marked `[REDACTED:kind]` so readers know something was there.
"""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY = r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)"

# Order matters: specific token shapes first, then the generic `key = value` rule.
RULES: list[tuple[str, re.Pattern[str]]] = [
    # A key cut before its END line (output caps) is redacted to the end of the text.
    ("pem", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----|.*\Z)", re.S)),
    ("slack", re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}|\bxapp-\d-[0-9A-Za-z-]{10,}")),
    ("aws", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("github", re.compile(r"\b(?:gh[pousr]_[0-9A-Za-z]{36,}|github_pat_[0-9A-Za-z_]{40,})\b")),
    ("gitlab", re.compile(r"\bglpat-[0-9A-Za-z_-]{20,}\b")),
    ("openai", re.compile(r"\bsk-(?:proj-|ant-)?[0-9A-Za-z_-]{20,}")),
    ("gcp", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}")),
    ("url-credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    ("authorization", re.compile(r"(?i)(?<=authorization:)\s*(?:bearer|basic|token)?\s*[^\s\"',]+")),
    (
        # The key may carry a prefix or suffix (PGPASSWORD, db_password, SLACK_BOT_TOKEN).
        "secret-value",
        # Affixes are bounded and start at a word boundary so long runs of word characters cost
        # linear time, not quadratic.
        re.compile(
            rf"(?i)(\b[\w.-]{{0,40}}?{_SECRET_KEY}[\w.-]{{0,40}}[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)([^\s\"',;}}]+)"
        ),
    ),
]


def _secret_value(match: re.Match[str]) -> str:
    key, value = match.group(1), match.group(2)
    # `max_tokens: 1024`, `token_ttl=300`: token counts and lifetimes are settings, not secrets.
    if value.isdigit() and len(value) < 10 and re.search(r"(?i)tokens?[_-]?(?:ttl|count|limit|s\b|_)|_tokens", key):
        return match.group(0)
    return f"{key}[REDACTED:secret-value]"


def redact_text(text: str) -> str:
    for kind, pattern in RULES:
        if kind == "secret-value":
            text = pattern.sub(_secret_value, text)
        elif kind == "authorization":
            text = pattern.sub(f" [REDACTED:{kind}]", text)
        else:
            text = pattern.sub(f"[REDACTED:{kind}]", text)
    return text


def redact(value: Any) -> Any:
    """Redact every string inside `value` (nested dicts and lists included)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value
