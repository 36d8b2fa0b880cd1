"""Redaction: real secret shapes are hidden, settings are not, and adversarial input stays fast."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from tests.fakes.model_server import Call, Reply, script, tool_results
from tools.redact import redact_text

SECRETS = [
    ("PGPASSWORD=abc123", "abc123"),
    ("AUTHTOKEN: zzz9qq", "zzz9qq"),
    ("dbpassword: hunter2", "hunter2"),
    ("db.password=s3cr3t", "s3cr3t"),
    ('secret_key_base = "abcdef"', "abcdef"),
    ("password=1234", "1234"),
    ("DATABASE_URL=postgres://app:pa55!@db:5432/app", "pa55!"),
    ("Authorization: Bearer eyJhbGciOi.abc.def", "eyJhbGciOi"),
    ("SLACK_BOT_TOKEN=xoxb-1234567890-abcdefghijkl", "xoxb-1234567890"),
    ("aws_access_key_id=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75\n[... cut at 64,000 bytes ...]", "MIIEpAIBAAKCAQEA75"),
]

KEPT = [
    "max_tokens: 1024",
    "token_ttl=300",
    "prompt_tokens=1234 completion_tokens=5",
    "token issued user=u-04211",
    "login failed: bad password user=u-1",
    "request_id=req-af8c3e74 trace=4bf92f3577b34da6a3ce929d0e0e4736",
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_secrets_are_redacted(text, secret):
    out = redact_text(text)
    assert secret not in out and "[REDACTED:" in out


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_lines_are_kept(text):
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1_000_000,
        "password" * 100_000,
        ("a" * 39 + "password") * 20_000,
        "x=y " * 200_000,
        "://a:b" * 100_000,
        "Authorization:" * 50_000,
        "eyJaaaaaaaaaa." * 50_000,
    ],
    ids=["word-run", "keys", "affixed-keys", "assignments", "userinfo", "auth-headers", "jwt-starts"],
)
def test_redaction_is_linear_on_adversarial_input(text):
    started = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - started < 1.5


def test_secrets_in_any_tool_return_type_are_redacted(model_server, make_agent):
    @dataclasses.dataclass
    class Env:
        url: str
        raw: bytes

    def env() -> Env:
        """The app's environment."""
        return Env(url="postgres://app:pa55!@db/app", raw=b"PGPASSWORD=hunter2")

    server = model_server(script(Reply(calls=[Call("env", {})]), Reply(content="seen")))
    make_agent(server, tools=[env]).run("go", thread="t")
    sent = json.dumps(server.requests[1])
    assert "pa55!" not in sent and "hunter2" not in sent
    assert tool_results(server.requests[1])[0]["ok"] is True
