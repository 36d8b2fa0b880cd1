"""Secret redaction for any text that leaves a tool: to the model, to a chat, to a log.

A redaction is marked `[REDACTED:kind]` so readers know something was there.
"""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY = r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)"

# Order matters: specific token shapes first, then the generic `key = value` rule.
RULES: list[tuple[str, re.Pattern[str]]] = [
    ("pem", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S)),
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
        "secret-value",
        re.compile(rf"(?i)(?<![0-9a-z])({_SECRET_KEY}[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)([^\s\"',;}}]+)"),
    ),
]


def redact_text(text: str) -> str:
    for kind, pattern in RULES:
        if kind == "secret-value":
            text = pattern.sub(lambda m: f"{m.group(1)}[REDACTED:secret-value]", text)
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
