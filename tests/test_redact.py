"""Redaction: real secret shapes are hidden, settings are not, and adversarial input stays fast."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from opsbot.tools.redact import redact_text
from tests.fakes.model_server import Call, Reply, script, tool_results

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


# Each input is about 1 MB and aimed at one pattern: long runs its quantifiers could re-scan, many
# starts that fail late, or an opening that is never closed.
ADVERSARIAL = {
    "word-run": "x" * 1_000_000,
    "keys": "password" * 100_000,
    "affixed-keys": ("a" * 39 + "password") * 20_000,
    "assignments": "x=y " * 200_000,
    "userinfo": "://a:b" * 100_000,
    "auth-headers": "Authorization:" * 50_000,
    "jwt-starts": "eyJaaaaaaaaaa." * 50_000,
    # token shapes
    "slack-starts": "xoxb-" * 200_000,
    "slack-webhook-starts": "hooks.slack.com/services/" * 40_000,
    "aws-starts": "AKIA" * 250_000,
    "gcp-starts": "AIza" * 250_000,
    "gcp-token-starts": "ya29." * 100_000 + "1//0" * 100_000,
    "github-starts": "ghp_" * 250_000,
    "github-pat-run": "github_pat_" * 100_000,
    "gitlab-starts": "glpat-" * 150_000,
    "openai-starts": "sk-" * 300_000,
    "openai-lowercase-run": "sk-" + "a" * 1_000_000,
    "anthropic-starts": "sk-ant-" * 150_000,
    "stripe-starts": "sk_live_" * 120_000,
    # PEM
    "pem-begins": "-----BEGIN RSA PRIVATE KEY-----" * 30_000,
    "pem-begin-prefixes": "-----BEGIN " * 100_000,
    "pem-ends": "-----END PRIVATE KEY-----" * 40_000,
    "pem-long-body": "-----BEGIN PRIVATE KEY-----\n" + "QUFB\n" * 200_000,
    "pem-header-run": "-----BEGIN PRIVATE KEY-----\n" + "Proc-Type" * 100_000,
    "pem-tails": ("QUFBQUFBQUFBQUFBQUFBQUFB\n" * 4 + "-----END PRIVATE KEY-----\n") * 8_000,
    "pem-tails-after-prose": ("a b c d e f g\n" * 4 + "-----END PRIVATE KEY-----") * 12_000,
    "pem-escaped-body": "-----BEGIN PRIVATE KEY-----" + "\\nQUFB" * 150_000,
    # URL userinfo
    "userinfo-colons": "://" + "a:" * 500_000,
    "userinfo-ats": "://a:" + "@" * 1_000_000,
    # Authorization
    "auth-bearer-headers": "Authorization: Bearer " * 50_000,
    "auth-parameter-lists": "Authorization: Digest " + 'a="b", ' * 140_000,
    "auth-open-value": "authorization=" + "a" * 1_000_000,
    "bearer-words": "Bearer " * 150_000,
    "bearer-run": "Bearer " + "a1" * 500_000,
    # key = value
    "key-colon-pairs": "password: " * 100_000,
    "key-open-quotes": 'password: "' * 100_000,
    "key-equals-chain": "password=" * 100_000,
    "dotted-keys": "a.password." * 100_000,
    "escaped-quote-run": 'password: "' + "\\a" * 500_000,
    "open-references": "password: <" * 100_000,
    "open-env-references": "password: ${" * 100_000,
    "open-templates": "password: {{" * 100_000,
    "cli-flags": "--password " * 100_000,
    "xml-opens": "<password>" * 100_000,
    "xml-unclosed": "<password>" + "a" * 1_000_000,
    "env-pair-names": "name: DB_PASSWORD\n" * 60_000,
    "env-pair-values": 'name: "x", value: ' * 60_000,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_redaction_is_linear_on_adversarial_input(text):
    # CPU time, not wall time: the suite runs on several workers, and a backtracking pattern costs
    # seconds of CPU here however busy the machine is.
    started = time.process_time()
    redact_text(text)
    assert time.process_time() - started < 1.5


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
