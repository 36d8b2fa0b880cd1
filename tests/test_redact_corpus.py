"""Redaction against corpora: realistic secrets of every kind are hidden and marked with their kind;
realistic lines that hold no secret come out byte for byte; parsed configs lose the values under
secret-looking keys and keep their settings.

Tokens are assembled at run time (`tok`) so that this file holds no complete token for secret
scanners and push protection to stop on. Every value here is made up.
"""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from opsbot.tools.redact import redact, redact_structure, redact_text

SAMPLE_LOGS = sorted((Path(__file__).resolve().parent.parent / "config" / "sample" / "logs").glob("*.log"))


def tok(prefix: str, body: str) -> str:
    return prefix + body


def b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


# ================================================================================ made-up secrets

SLACK_BOT = tok("xoxb-", "2400000001-2400000000002-bBRsk29cztUX1kmObfEjdpyH")
SLACK_USER = tok("xoxp-", "2400000001-2400000000003-2400000000004-2d017e07fc10d0f9061bfd7105da2c88")
SLACK_APP = tok("xapp-", "1-A05QXPL2M8T-6181818181818-8018a460eaf5d6e7693d8605b771eaa590bfca56ad9548c5dfc3418c9ea89998")
SLACK_LEGACY = tok("xoxa-", "2-24000000015-qLNZ7RSttQWkWakiqx1f6z4y")
SLACK_REFRESH = tok("xoxe-", "1-My0xLTI0MDAwMDAwMDEtNjE4MTgxODE4MTgxOC1SVWJOZWJUa3c0OEN1aHpR")
SLACK_CONFIG = tok("xoxe.xoxp-", "1-Mi0yLTI0MDAwMDAwMDEtMjQwMDAwMDAwMDAwMy1pUWtJd1pNVDVwVjExdnRO")
SLACK_HOOK = tok("services/T0A1B2C3D/B0E1F2G3H/", "KRidQZhUsBZc3QaMhf5b27qL")
SLACK_WORKFLOW = tok("workflows/T0A1B2C3D/A0F9E8D7C/512345678901234567/", "3u1mJnkB1ZWlMvGIMskFk8di")

AWS_KEY_ID = tok("AKIA", "72UYXMWO7NAP66IE")
AWS_STS_KEY_ID = tok("ASIA", "EEP3PBSGHWL4A7H5")
AWS_DOCUMENTED_EXAMPLE = tok("AKIA", "IOSFODNN7EXAMPLE")
AWS_SECRET = "5MP2rdfqr6R7wIH3qS3205ZxauEKa4Ca9+3r4cXe"
AWS_SECRET_2 = "U7DpGDBaFXx6sDYZfyXI8q6keblhnInXpYsPQQgd"
AWS_SESSION = "IQoJb3JpZ2luX2VjEJ3//////////wEaCXVzLWVhc3QtMSJHMEUCIQDx8aKQ3vT0Z2pYh"

GCP_KEY = tok("AIza", "SyCXJ4rcChlSxNAVPLof96KC7RHXLaZOUfW")
GCP_KEY_2 = tok("AIza", "aW-mOIxEUPMuq8G-tUx5Ldnsyd36dBxT3wG")
GCP_CLIENT_SECRET = tok("GOCSPX-", "a06qx7HdWyOSJC9KmsGDZvdbf5Ig")
GCP_ACCESS = tok("ya29.", "a0AfB_KyQzJRs7TI9Xf_mUxYkHrq_FmNGwDBq7QhNKAYJE3ZDda1RhUayZFQUzboYR")
GCP_REFRESH = tok("1//0", "9xK3mP2vL8nQ4rT6yW1zB5cD7fG0hJ2kM4nP6qS8uV")

GH_PAT = tok("ghp_", "KRidQZhUsBZc3QaMhf5b27qL37t0kqgC3SVT")
GH_OAUTH = tok("gho_", "3u1mJnkB1ZWlMvGIMskFk8di05IoIbgAEzrm")
GH_USER = tok("ghu_", "8PqBCB64fohOtqxBnkv5L2JCNwzDf5otWhWf")
GH_SERVER = tok("ghs_", "S27wdenJCAnpI2PE22p8WZr7Se0AlSj20bIc")
GH_REFRESH = tok("ghr_", "j8F6tcgqJmDdKTYxeVClr8rOj9JTnrhTczVD")
GH_FINE = tok("github_pat_", "9J3fHAx2qaWsBTFJxepOOn_iQkIwZMT5pV11vtNblyDPY2ITxvkzFLiHx8YqD0h8zuDEzVJfxSJr4IkNpY")

GL_PAT = tok("glpat-", "xI5OKfZvGJuvNl7UReAC")
GL_TRIGGER = tok("glptt-", "OxBKvysZzvXLNaJrgBHu1a2b3c4d5e6f7a8b9c0d")
GL_DEPLOY = tok("gldt-", "fSBsBfpa141X1WkgxuEF")
GL_RUNNER = tok("glrt-", "t3_RUbNebTkw48CuhzQSHMDgm")
GL_REGISTRATION = tok("GR1348941", "z4yfTcCpHTAkclFYhc9m")

OPENAI_PROJECT = tok(
    "sk-proj-",
    "qLNZ_7RSttQWkWakiqx1f6z4yfTcCpHTAkclFYhc9mH177FzI2NI_IuVbtJUbufuezwIRXAh3j"
    "T3BlbkFJOEEOWFVRRh1TlF9XCHro40KQ-i6Nh4K0jxGdqH0Tz0IpZkWxcnWSlJUjjN",
)
OPENAI_LEGACY = tok("sk-", "9uVvAhXW83AO64yOa53jT3BlbkFJ1sKDcy86ar5ZMIPDQLBN")
ANTHROPIC = tok(
    "sk-ant-",
    "api03-hiRpzt9KU_602rOD41Xokg1XPR7_K4nUUy9n1wFPLeoIoevzVoK2U3CH7FNdjIlq-9Ck5SZuTMARHTk76hlls9PTVLL1yAA",
)

STRIPE_LIVE = tok("sk_live_", "51NxUk7QCqBjOQXSsAj2xzXSKbU1z4yfTcCpHTAkclF")
STRIPE_RESTRICTED = tok("rk_live_", "5z3dJlmCrx4DA1OfvUPaIS88Rf4si9Bq")
STRIPE_WEBHOOK = tok("whsec_", "EuEkwI4xlcXllzX6AlB4TrO7t1IPq52H")

JWT = ".".join(
    [
        b64url({"alg": "RS256", "typ": "JWT", "kid": "2026-11"}),
        b64url({"sub": "u-70239", "iss": "https://auth.internal", "exp": 1796000000}),
        "74v9qD7IfmRy1owAN6USHu08rKVqHGtFFx442fRM4YpRUbNebTkw48CuhzQSHMDgm",
    ]
)
JWT_UNSIGNED = b64url({"alg": "none"}) + "." + b64url({"sub": "u-11889", "admin": True}) + "."
# jwt.io's sample token: documented, and redacted like any other (see tools/redact.py).
JWT_DOCUMENTED = ".".join(
    [
        b64url({"alg": "HS256", "typ": "JWT"}),
        b64url({"sub": "1234567890", "name": "John Doe", "iat": 1516239022}),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ]
)

# PEM bodies: base64 of made-up bytes, wrapped like a real key.
KEY_LINES = textwrap.wrap(base64.b64encode(bytes(range(7, 250)) * 2).decode(), 64)
FIRST, LAST = KEY_LINES[0], KEY_LINES[-1]


def pem(label: str, lines: list[str] = KEY_LINES, *, headers: str = "") -> str:
    body = "\n".join(lines)
    return f"-----BEGIN {label}-----\n{headers}{body}\n-----END {label}-----"


GCP_SERVICE_ACCOUNT = json.dumps(
    {
        "type": "service_account",
        "project_id": "shop-prod",
        "private_key": pem("PRIVATE KEY") + "\n",
        "client_email": "checkout@shop-prod.iam.gserviceaccount.com",
    }
)

# ================================================================================ true positives


def secret(text: str, hidden: str, kind: str, kept: str = "", *, id: str) -> Any:
    """`hidden` must be gone, `[REDACTED:kind]` present, and `kept` (context) still readable."""
    return pytest.param(text, hidden, kind, kept, id=id)


SECRETS = [
    # ---- slack
    secret(f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT, "slack", "SLACK_BOT_TOKEN=", id="slack-bot-env"),
    secret(
        f"2026-11-29T02:41:03Z WARN  notifier chat.postMessage failed token={SLACK_USER} error=not_in_channel",
        SLACK_USER,
        "slack",
        "error=not_in_channel",
        id="slack-user-token-in-log",
    ),
    secret(f"  app_token: {SLACK_APP}", SLACK_APP, "slack", "app_token:", id="slack-app-token-yaml"),
    secret(
        f'{{"ok":false,"error":"token_revoked","token":"{SLACK_LEGACY}"}}',
        SLACK_LEGACY,
        "slack",
        '"error":"token_revoked"',
        id="slack-legacy-token-json",
    ),
    secret(
        f"oauth.v2.exchange -> refresh_token={SLACK_REFRESH} expires_in=43200",
        SLACK_REFRESH,
        "slack",
        "expires_in=43200",
        id="slack-refresh-token",
    ),
    secret(
        f"SLACK_CONFIG_TOKEN='{SLACK_CONFIG}'", SLACK_CONFIG, "slack", "SLACK_CONFIG_TOKEN=", id="slack-config-token"
    ),
    # ---- slack webhooks
    secret(
        f"  slack_api_url: https://hooks.slack.com/{SLACK_HOOK}",
        SLACK_HOOK,
        "slack-webhook",
        "https://hooks.slack.com/",
        id="slack-webhook-alertmanager-yaml",
    ),
    secret(
        "curl -s -X POST -H 'Content-type: application/json' --data '{\"text\":\"deploy done\"}' "
        f"https://hooks.slack.com/{SLACK_WORKFLOW}",
        SLACK_WORKFLOW,
        "slack-webhook",
        "curl -s -X POST",
        id="slack-workflow-webhook-curl",
    ),
    # ---- aws
    secret(f"AWS_ACCESS_KEY_ID={AWS_KEY_ID}", AWS_KEY_ID, "aws", "AWS_ACCESS_KEY_ID=", id="aws-key-id-env"),
    secret(f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws", "aws_secret_access_key", id="aws-secret-ini"),
    secret(f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET_2}"', AWS_SECRET_2, "aws", "export", id="aws-secret-env"),
    secret(f'    "AccessKeyId": "{AWS_STS_KEY_ID}",', AWS_STS_KEY_ID, "aws", '"AccessKeyId"', id="aws-sts-key-id-json"),
    secret(
        f'    "SecretAccessKey": "{AWS_SECRET_2}",', AWS_SECRET_2, "aws", '"SecretAccessKey"', id="aws-sts-secret-json"
    ),
    secret(f"aws_session_token = {AWS_SESSION}", AWS_SESSION, "aws", "aws_session_token", id="aws-session-token-ini"),
    secret(
        f"2026-11-29T03:02:11Z ERROR payments s3 upload denied: AccessDenied for {AWS_KEY_ID} bucket=shop-receipts",
        AWS_KEY_ID,
        "aws",
        "bucket=shop-receipts",
        id="aws-key-id-in-log",
    ),
    # AWS documents this key id as an example; it is redacted like a real one (tools/redact.py).
    secret(
        f"aws_access_key_id = {AWS_DOCUMENTED_EXAMPLE}",
        AWS_DOCUMENTED_EXAMPLE,
        "aws",
        "aws_access_key_id",
        id="aws-documented-example-key",
    ),
    # ---- gcp
    secret(f"GOOGLE_MAPS_API_KEY={GCP_KEY}", GCP_KEY, "gcp", "GOOGLE_MAPS_API_KEY=", id="gcp-api-key-env"),
    secret(
        f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={GCP_KEY_2} 200 41ms",
        GCP_KEY_2,
        "gcp",
        "200 41ms",
        id="gcp-api-key-in-url",
    ),
    secret(
        '{"installed":{"client_id":"1234567890-abc.apps.googleusercontent.com",'
        f'"client_secret":"{GCP_CLIENT_SECRET}"}}}}',
        GCP_CLIENT_SECRET,
        "gcp",
        "apps.googleusercontent.com",
        id="gcp-oauth-client-secret-json",
    ),
    secret(f"Authorization: Bearer {GCP_ACCESS}", GCP_ACCESS, "gcp", "Authorization: Bearer ", id="gcp-access-token"),
    secret(f'  "refresh_token": "{GCP_REFRESH}",', GCP_REFRESH, "gcp", '"refresh_token"', id="gcp-refresh-token"),
    # ---- github
    secret(f"GITHUB_TOKEN={GH_PAT}", GH_PAT, "github", "GITHUB_TOKEN=", id="github-classic-pat-env"),
    secret(
        f'{{"access_token":"{GH_OAUTH}","token_type":"bearer","scope":"repo"}}',
        GH_OAUTH,
        "github",
        '"scope":"repo"',
        id="github-oauth-token-json",
    ),
    secret(
        f"gh auth status: Logged in to github.com account ci-bot ({GH_USER})",
        GH_USER,
        "github",
        "account ci-bot",
        id="github-user-to-server-token",
    ),
    secret(
        f"remote: https://x-access-token:{GH_SERVER}@github.com/acme/shop.git",
        GH_SERVER,
        "github",
        "@github.com/acme/shop.git",
        id="github-app-token-in-remote-url",
    ),
    secret(
        f"refresh_token={GH_REFRESH}&grant_type=refresh_token",
        GH_REFRESH,
        "github",
        "grant_type=refresh_token",
        id="github-refresh-token-form",
    ),
    secret(f"  token: {GH_FINE}", GH_FINE, "github", "token:", id="github-fine-grained-pat-yaml"),
    secret(
        f'curl -H "Authorization: token {GH_PAT}" https://api.github.com/repos/acme/shop',
        GH_PAT,
        "github",
        "https://api.github.com/repos/acme/shop",
        id="github-token-scheme-header",
    ),
    # ---- gitlab
    secret(f"GITLAB_TOKEN={GL_PAT}", GL_PAT, "gitlab", "GITLAB_TOKEN=", id="gitlab-pat-env"),
    secret(
        f"curl -X POST -F token={GL_TRIGGER} -F ref=main https://gitlab.internal/api/v4/projects/42/trigger/pipeline",
        GL_TRIGGER,
        "gitlab",
        "-F ref=main",
        id="gitlab-trigger-token-curl",
    ),
    secret(
        f"git clone https://gitlab+deploy-token-7:{GL_DEPLOY}@gitlab.internal/shop/checkout.git",
        GL_DEPLOY,
        "gitlab",
        "@gitlab.internal/shop/checkout.git",
        id="gitlab-deploy-token-url",
    ),
    secret(f'  token = "{GL_RUNNER}"', GL_RUNNER, "gitlab", "token =", id="gitlab-runner-token-toml"),
    secret(
        f"gitlab-runner register --registration-token {GL_REGISTRATION} --executor docker",
        GL_REGISTRATION,
        "gitlab",
        "--executor docker",
        id="gitlab-runner-registration-token",
    ),
    # ---- openai
    secret(
        f"OPENAI_API_KEY={OPENAI_PROJECT}", OPENAI_PROJECT, "openai", "OPENAI_API_KEY=", id="openai-project-key-env"
    ),
    secret(f"  api_key: {OPENAI_LEGACY}", OPENAI_LEGACY, "openai", "api_key:", id="openai-legacy-key-yaml"),
    secret(
        f'2026-11-29T02:44:10Z DEBUG httpx request headers={{"authorization": "Bearer {OPENAI_PROJECT}"}}',
        OPENAI_PROJECT,
        "openai",
        "DEBUG httpx",
        id="openai-key-in-debug-headers",
    ),
    # ---- anthropic
    secret(f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "anthropic", "ANTHROPIC_API_KEY=", id="anthropic-key-env"),
    secret(f"x-api-key: {ANTHROPIC}", ANTHROPIC, "anthropic", "x-api-key:", id="anthropic-key-header"),
    # ---- stripe
    secret(f"STRIPE_SECRET_KEY={STRIPE_LIVE}", STRIPE_LIVE, "stripe", "STRIPE_SECRET_KEY=", id="stripe-secret-key-env"),
    secret(
        f"2026-11-29T02:40:14Z ERROR payments stripe auth failed key={STRIPE_RESTRICTED} status=401",
        STRIPE_RESTRICTED,
        "stripe",
        "status=401",
        id="stripe-restricted-key-in-log",
    ),
    secret(
        f'  webhook_signing_secret: "{STRIPE_WEBHOOK}"',
        STRIPE_WEBHOOK,
        "stripe",
        "webhook_signing_secret",
        id="stripe-webhook-secret",
    ),
    # ---- jwt
    secret(f"Cookie: session={JWT}; theme=dark", JWT, "jwt", "theme=dark", id="jwt-session-cookie"),
    secret(
        f"302 Location: https://shop.example.com/callback#id_token={JWT}&state=af0ifjsldkj",
        JWT,
        "jwt",
        "https://shop.example.com/callback#id_token=",
        id="jwt-id-token-in-redirect",
    ),
    secret(f'{{"access_token": "{JWT}", "expires_in": 3600}}', JWT, "jwt", '"expires_in": 3600', id="jwt-oauth-json"),
    secret(f"token={JWT_DOCUMENTED}", JWT_DOCUMENTED, "jwt", "token=", id="jwt-documented-example"),
    secret(f"X-Forwarded-Access-Token: {JWT_UNSIGNED}", JWT_UNSIGNED, "jwt", "X-Forwarded", id="jwt-unsigned-alg-none"),
    # ---- pem private keys
    secret(pem("RSA PRIVATE KEY") + "\nssh: connected", LAST, "pem", "ssh: connected", id="pem-rsa"),
    secret(
        pem("RSA PRIVATE KEY", headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"),
        LAST,
        "pem",
        id="pem-encrypted-with-headers",
    ),
    secret(pem("OPENSSH PRIVATE KEY"), LAST, "pem", id="pem-openssh"),
    secret(pem("EC PRIVATE KEY"), LAST, "pem", id="pem-ec"),
    secret(
        pem("PGP PRIVATE KEY BLOCK", [*KEY_LINES, "=njUN"], headers="Version: GnuPG v2\n\n"),
        LAST,
        "pem",
        id="pem-pgp-private-key-block",
    ),
    secret(
        GCP_SERVICE_ACCOUNT, FIRST, "pem", "checkout@shop-prod.iam.gserviceaccount.com", id="pem-gcp-service-account"
    ),
    secret(
        "$ head -c 300 /etc/ssl/private/checkout.key\n-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(KEY_LINES[:3])
        + "\n[... output cut at 300 bytes ...]",
        KEY_LINES[2],
        "pem",
        "[... output cut at 300 bytes ...]",
        id="pem-cut-before-end",
    ),
    secret(
        "$ tail -n 3 /etc/ssl/private/checkout.key\n" + "\n".join(KEY_LINES[-2:]) + "\n-----END RSA PRIVATE KEY-----",
        KEY_LINES[-2],
        "pem",
        "$ tail -n 3 /etc/ssl/private/checkout.key",
        id="pem-tail-without-begin",
    ),
    secret(
        "stringData:\n  tls.key: |\n" + textwrap.indent(pem("PRIVATE KEY"), "    ") + "\n  tls.crt: LS0tLS1CRUdJTg==",
        LAST,
        "pem",
        "tls.crt: LS0tLS1CRUdJTg==",
        id="pem-k8s-secret-indented",
    ),
    # ---- url userinfo
    secret(
        "DATABASE_URL=postgres://app:Tr0ub4dor-3@pg-primary.internal:5432/ledger",
        "Tr0ub4dor-3",
        "url-credentials",
        "postgres://app:",
        id="url-postgres-env",
    ),
    secret(
        "mysql://shop:p@ss!w0rd#1@mysql.internal:3306/shop",
        "ss!w0rd#1",
        "url-credentials",
        "@mysql.internal:3306/shop",
        id="url-unencoded-at-in-password",
    ),
    secret(
        "REDIS_URL=redis://:9f2c4e1a7b3d@cache.internal:6379/0",
        "9f2c4e1a7b3d",
        "url-credentials",
        "@cache.internal:6379/0",
        id="url-redis-password-only",
    ),
    secret(
        "kombu.exceptions.OperationalError: cannot connect to "
        "amqp://celery:Qz7-xW2p@rabbitmq.internal:5672// (timed out)",
        "Qz7-xW2p",
        "url-credentials",
        "(timed out)",
        id="url-amqp-in-traceback",
    ),
    secret(
        'MONGO_URI="mongodb+srv://orders:hK8%23mQ2z@cluster0.ab1cd.mongodb.net/orders?retryWrites=true"',
        "hK8%23mQ2z",
        "url-credentials",
        "retryWrites=true",
        id="url-mongodb-srv",
    ),
    secret(
        "pip install --index-url https://__token__:pypi-AgEIcHlwaS5vcmc@pypi.internal/simple shop-sdk",
        "pypi-AgEIcHlwaS5vcmc",
        "url-credentials",
        "shop-sdk",
        id="url-package-index-token",
    ),
    secret(
        "sqlalchemy.exc.OperationalError: connection failed: postgresql+psycopg2://ledger_rw:8vN!e2@pg-replica.internal/ledger",
        "8vN!e2",
        "url-credentials",
        "ledger_rw",
        id="url-sqlalchemy-error",
    ),
    # ---- authorization headers
    secret(
        "Authorization: Basic c2hvcDpUcjB1YjRkb3I=",
        "c2hvcDpUcjB1YjRkb3I=",
        "authorization",
        "Authorization: Basic ",
        id="auth-basic",
    ),
    secret(
        '2026/11/29 02:41:17 [debug] 31#31: *5 http header: "Authorization: Bearer 8f1c2b7e9d4a6f3e0b5c7a9d2e4f6a8b"',
        "8f1c2b7e9d4a6f3e0b5c7a9d2e4f6a8b",
        "authorization",
        "http header",
        id="auth-bearer-nginx-debug",
    ),
    secret(
        "{'Authorization': 'Bearer 74v9qD7IfmRy1owAN6USHu08rKVqHGtFFx442fRM4Yp', 'Accept': 'application/json'}",
        "74v9qD7IfmRy1owAN6USHu08rKVqHGtFFx442fRM4Yp",
        "authorization",
        "'Accept': 'application/json'",
        id="auth-python-headers-repr",
    ),
    secret(
        'curl -H "Authorization: Token ff1365a1667b4e8bb628a6827adc35d2" https://sentry.internal/api/0/projects/',
        "ff1365a1667b4e8bb628a6827adc35d2",
        "authorization",
        "https://sentry.internal/api/0/projects/",
        id="auth-token-scheme",
    ),
    secret(
        f"Authorization: AWS4-HMAC-SHA256 Credential={AWS_KEY_ID}/20261129/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        "authorization",
        "AWS4-HMAC-SHA256",
        id="auth-aws-sigv4",
    ),
    secret(
        'Authorization: Digest username="shop", realm="ops", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c0", '
        'uri="/metrics", response="6629fae49393a05397450978507c4ef1"',
        "6629fae49393a05397450978507c4ef1",
        "authorization",
        "Digest",
        id="auth-digest",
    ),
    secret(
        "Authorization: kQ9zXv2LmN8pR4tW6yB1cD5eF0gHjS3u",
        "kQ9zXv2LmN8pR4tW6yB1cD5eF0gHjS3u",
        "authorization",
        "Authorization:",
        id="auth-raw-key-without-scheme",
    ),
    secret(
        "Proxy-Authorization: Basic b3BzYm90OmFsc28tbm90LXJlYWw=",
        "b3BzYm90OmFsc28tbm90LXJlYWw=",
        "authorization",
        "Proxy-Authorization: Basic",
        id="auth-proxy",
    ),
    secret(
        "retrying GET /v1/charges with bearer 0a1b2c3d4e5f60718293a4b5c6d7e8f9 (attempt 2)",
        "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "authorization",
        "(attempt 2)",
        id="auth-bearer-outside-a-header",
    ),
    # ---- key = value, every config format
    secret("password = Wint3r-is-coming", "Wint3r-is-coming", "secret-value", "password = ", id="ini-password"),
    secret(
        "PGPASSWORD=Zx81-mq0p psql -h pg-primary.internal", "Zx81-mq0p", "secret-value", "psql -h", id="env-pgpassword"
    ),
    secret(
        "export DB_PASSWORD='c0rrect horse battery'",
        "c0rrect horse battery",
        "secret-value",
        "export DB_PASSWORD=",
        id="env-quoted-with-spaces",
    ),
    secret("    db_password: hunter2-prod", "hunter2-prod", "secret-value", "db_password:", id="yaml-db-password"),
    secret(
        '  ssh_key_passphrase: "open sesame 42"',
        "open sesame 42",
        "secret-value",
        "ssh_key_passphrase",
        id="yaml-quoted-passphrase",
    ),
    secret(
        '{"user": "svc-checkout", "password": "Qw3rty!9"}',
        "Qw3rty!9",
        "secret-value",
        '"user": "svc-checkout"',
        id="json-password",
    ),
    secret('{"pin_attempts": 3, "password": 483920}', "483920", "secret-value", '"pin_attempts": 3', id="json-number"),
    secret(
        'msg="config loaded" body="{\\"client_secret\\": \\"cs-7d9f8c6b5a\\", \\"region\\": \\"eu\\"}"',
        "cs-7d9f8c6b5a",
        "secret-value",
        '\\"region\\": \\"eu\\"',
        id="json-escaped-inside-log-field",
    ),
    secret(
        "spring.datasource.password=Pr0d-db-2026",
        "Pr0d-db-2026",
        "secret-value",
        "spring.datasource.password=",
        id="properties-dotted-key",
    ),
    secret('api_key = "c8e1f4b2a9d7e6f5"', "c8e1f4b2a9d7e6f5", "secret-value", "api_key = ", id="toml-api-key"),
    secret(
        "java -jar migrate.jar --db-password=Tr1cky-Pw --url=jdbc:postgresql://pg/ledger",
        "Tr1cky-Pw",
        "secret-value",
        "--url=jdbc:postgresql://pg/ledger",
        id="cli-flag-equals",
    ),
    secret(
        "4121 /usr/bin/backup --password s3cr3t-bk --target s3://backups/ledger",
        "s3cr3t-bk",
        "secret-value",
        "--target s3://backups/ledger",
        id="cli-flag-separate-argument",
    ),
    secret(
        "kubectl create secret generic db-creds --from-literal=password=hunter2-k8s",
        "hunter2-k8s",
        "secret-value",
        "--from-literal=password=",
        id="kubectl-from-literal",
    ),
    secret(
        "Server=tcp:sql.internal,1433;Database=shop;User Id=sa;Password=Hunter2!;Encrypt=true",
        "Hunter2!",
        "secret-value",
        "Encrypt=true",
        id="ado-connection-string",
    ),
    secret(
        "DefaultEndpointsProtocol=https;AccountName=shopstore;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;"
        "EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
        "secret-value",
        "EndpointSuffix=core.windows.net",
        id="azure-storage-account-key",
    ),
    secret(
        "<server><id>nexus</id><username>deploy</username><password>Mvn-Depl0y</password></server>",
        "Mvn-Depl0y",
        "secret-value",
        "<username>deploy</username>",
        id="xml-maven-settings",
    ),
    secret(
        '        - name: DB_PASSWORD\n          value: "hunter2-env"',
        "hunter2-env",
        "secret-value",
        "- name: DB_PASSWORD",
        id="k8s-env-name-value",
    ),
    secret(
        '{"name": "REDIS_PASSWORD", "value": "r3dis-pw-77"}',
        "r3dis-pw-77",
        "secret-value",
        '"name": "REDIS_PASSWORD"',
        id="ecs-task-definition-env",
    ),
    secret(":password => 'rails-s3cret',", "rails-s3cret", "secret-value", ":password =>", id="ruby-hash-rocket"),
    secret(
        "'secret' => 'laravel-app-secret-01',",
        "laravel-app-secret-01",
        "secret-value",
        "'secret' =>",
        id="php-array",
    ),
    secret('dbPass := "g0-pa55"', "g0-pa55", "secret-value", "dbPass :=", id="go-camel-case-pass"),
    secret(
        "X-Auth-Token: 3c6e0b8a9c15224a8228b9a98ca1531d",
        "3c6e0b8a9c15224a8228b9a98ca1531d",
        "secret-value",
        "X-Auth-Token:",
        id="header-x-auth-token",
    ),
    secret(
        'secret_key_base: "f3a9c2d1e8b7a6f5"', "f3a9c2d1e8b7a6f5", "secret-value", "secret_key_base", id="rails-secret"
    ),
    secret(
        "password: ${DB_PASSWORD:-hunter2}",
        "hunter2",
        "secret-value",
        "password:",
        id="env-reference-with-default-value",
    ),
    secret(
        "SLACK_SIGNING_SECRET=8f742231b10e8888abcd99a1b2c3d4e5",
        "8f742231b10e8888abcd99a1b2c3d4e5",
        "secret-value",
        "SLACK_SIGNING_SECRET=",
        id="slack-signing-secret",
    ),
    secret("      - WEBHOOK_SECRET=whk-5f1e9c", "whk-5f1e9c", "secret-value", "WEBHOOK_SECRET=", id="compose-env-list"),
    secret(
        "oidc.client_secret: 7Hq-Lx2_Vb9", "7Hq-Lx2_Vb9", "secret-value", "oidc.client_secret", id="oidc-client-secret"
    ),
    secret(
        "VAULT_SECRET_ID=4f0b3c8e-1d2a-4b6c-9e8f-7a6b5c4d3e2f",
        "4f0b3c8e-1d2a-4b6c-9e8f-7a6b5c4d3e2f",
        "secret-value",
        "VAULT_SECRET_ID=",
        id="vault-secret-id",
    ),
    # The password in Docker Hub's compose examples; as a value it is a password like any other.
    secret(
        "      MYSQL_ROOT_PASSWORD: example", "example", "secret-value", "MYSQL_ROOT_PASSWORD:", id="compose-example-pw"
    ),
    secret("redis_pass=Rd-2026-x", "Rd-2026-x", "secret-value", "redis_pass=", id="pass-as-a-word"),
]


@pytest.mark.parametrize("text, hidden, kind, kept", SECRETS)
def test_secret_is_hidden_and_marked(text: str, hidden: str, kind: str, kept: str) -> None:
    out = redact_text(text)
    assert hidden not in out
    assert f"[REDACTED:{kind}]" in out, out
    assert kept in out, out


def test_the_corpus_is_wide() -> None:
    kinds = {param.values[2] for param in SECRETS}
    assert len(SECRETS) >= 60 and len(kinds) >= 10


@pytest.mark.parametrize(
    "text",
    [p.values[0] for p in SECRETS if p.values[2] == "pem"],
    ids=[p.id for p in SECRETS if p.values[2] == "pem"],
)
def test_no_line_of_a_private_key_survives(text: str) -> None:
    out = redact_text(text)
    for line in KEY_LINES:
        if line in text:
            assert line not in out


@pytest.mark.parametrize("text, hidden, kind, kept", SECRETS)
def test_redaction_is_idempotent(text: str, hidden: str, kind: str, kept: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


# ================================================================================ benign lines

BENIGN = [
    # ---- ids and hashes
    pytest.param("order 3f2b8c1e-9d4a-4e6f-b1a2-7c8d9e0f1a2b created", id="uuid"),
    pytest.param("CorrelationId=7C9E6679-7425-40DE-944B-E07FC1F90AE7", id="uuid-upper-case"),
    pytest.param("commit 9fceb02d0ae598e95dc970b74767f19372d61af8", id="git-sha"),
    pytest.param("deployed checkout 2026.11.29-1 (9fceb02) to prod", id="git-short-sha"),
    pytest.param("Merge pull request #1432 from acme/fix-pool-size", id="git-merge"),
    pytest.param("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  release.tar.gz", id="sha256sum"),
    pytest.param(
        "image: registry.internal/shop/checkout@sha256:"
        "4bf92f3577b34da6a3ce929d0e0e47364bf92f3577b34da6a3ce929d0e0e4736",
        id="image-digest",
    ),
    pytest.param('ETag: "d41d8cd98f00b204e9800998ecf8427e"', id="md5-etag"),
    pytest.param("request_id=req-af8c3e74 trace=4bf92f3577b34da6a3ce929d0e0e4736", id="request-and-trace-ids"),
    pytest.param("traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", id="traceparent"),
    pytest.param("X-Request-ID: 5f3c9a2e-8b1d-4c7a-9e0f-1a2b3c4d5e6f", id="x-request-id"),
    pytest.param("dd.trace_id=1234567890123456789 dd.span_id=987654321987654321", id="datadog-ids"),
    pytest.param("RequestId: 8a2f7c3e-1b4d-4e5f-9a6b-7c8d9e0f1a2b Duration: 112.45 ms", id="lambda-request-id"),
    pytest.param("pod/checkout-7d9f8c6b5-x2x9z   1/1   Running   0   3h", id="pod-name"),
    pytest.param("deployment.apps/sk-learn-model-server-7d9f8c6b5 rolled out", id="sk-prefixed-name"),
    pytest.param("payload=eyJldmVudCI6ImNoYXJnZS5zdWNjZWVkZWQifQ==", id="base64-json-not-a-jwt"),
    pytest.param("logo.png: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk", id="base64-image"),
    pytest.param("alg header eyJhbGciOiJSUzI1NiJ9 decoded fine", id="jwt-header-alone"),
    pytest.param(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0Y2hvcHMtcHVibGljLWtleS1ub3QtYS1zZWNyZXQ ops@bastion",
        id="ssh-public-key",
    ),
    pytest.param(
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEmadeupmadeupmadeupmadeupmadeup\n"
        "-----END PUBLIC KEY-----",
        id="pem-public-key",
    ),
    pytest.param(
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
        "-----END CERTIFICATE-----",
        id="pem-certificate",
    ),
    pytest.param("grep -rn -- '-----BEGIN RSA PRIVATE KEY-----' . found no keys in the repo", id="pem-mentioned"),
    pytest.param("SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU ops@bastion (ED25519)", id="key-fingerprint"),
    pytest.param("arn:aws:iam::123456789012:role/checkout-api eu-west-1", id="aws-role-arn"),
    pytest.param("AKIA is the prefix of long-term AWS access key ids", id="akia-in-prose"),
    # ---- placeholders and references
    pytest.param("api_key: <your key here>", id="placeholder-angle-brackets"),
    pytest.param("password: ${DB_PASSWORD}", id="placeholder-env-braces"),
    pytest.param("PGPASSWORD=$DB_PASSWORD psql -h pg-primary.internal ledger", id="placeholder-env-dollar"),
    pytest.param('token: "{{ .Values.slack.botToken }}"', id="placeholder-helm"),
    pytest.param("SLACK_BOT_TOKEN: ${{ secrets.SLACK_BOT_TOKEN }}", id="placeholder-github-actions"),
    pytest.param("password: ********", id="placeholder-mask"),
    pytest.param('password: ""', id="placeholder-empty"),
    pytest.param("api_key: null", id="placeholder-null"),
    pytest.param("secret: false", id="placeholder-boolean"),
    pytest.param("password_file: /run/secrets/db_password", id="secret-in-a-file"),
    pytest.param("GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/google/key.json", id="credentials-path"),
    pytest.param("secret: arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/ledger-AbCdEf", id="secret-arn"),
    pytest.param("DATABASE_URL=postgres://app:${DB_PASSWORD}@pg-primary.internal:5432/ledger", id="placeholder-in-url"),
    pytest.param("postgres://<user>:<password>@<host>:5432/<db>", id="placeholder-url-template"),
    pytest.param('password = os.environ["DB_PASSWORD"]', id="placeholder-code"),
    pytest.param('curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user', id="placeholder-bearer"),
    pytest.param("valueFrom:\n  secretKeyRef:\n    name: db-creds\n    key: password", id="k8s-secret-key-ref"),
    pytest.param("private_key: |", id="yaml-block-scalar-header"),
    # ---- settings about secrets
    pytest.param("token_count=5", id="token-count"),
    pytest.param("max_tokens: 1024", id="max-tokens"),
    pytest.param('{"usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}}', id="usage-json"),
    pytest.param("token_ttl=300", id="token-ttl"),
    pytest.param("jwt.token_ttl_s: 900", id="token-ttl-with-unit"),
    pytest.param("password_min_length: 12", id="password-min-length"),
    pytest.param("secret_name: prod-db", id="secret-name"),
    pytest.param("token_url: https://auth.example.com/oauth/token", id="token-url"),
    pytest.param("token_endpoint: https://auth.internal/oauth2/token", id="token-endpoint"),
    pytest.param('"token_type": "Bearer",', id="token-type"),
    pytest.param('"expires_in": 3600, "refresh_token_expires_in": 86400', id="expires-in"),
    pytest.param("tokenizer: cl100k_base", id="tokenizer"),
    pytest.param("throughput tokens_per_second=35.2 max_output_tokens=4096", id="token-throughput"),
    pytest.param("credential_source = Ec2InstanceMetadata", id="aws-credential-source"),
    pytest.param("docker login --password-stdin registry.internal", id="password-stdin-flag"),
    pytest.param("pg_dump --no-password --format=custom ledger", id="no-password-flag"),
    pytest.param("PWD=/srv/checkout", id="shell-pwd"),
    pytest.param("password:  16 bytes", id="kubectl-describe-secret-size"),
    pytest.param("bypass_cache=true compass_heading=270 passenger_count=2", id="pass-inside-words"),
    pytest.param("pass_through_headers: x-request-id,traceparent", id="pass-through"),
    pytest.param("memory.lock_ttl_s: 300", id="opsbot-setting"),
    pytest.param("    pool_size: 5        # was 20 before 2026.11.29-1", id="sample-config-line"),
    # ---- log lines and prose
    pytest.param("2026-11-29T02:40:00Z INFO  auth token issued user=u-70239", id="auth-token-issued"),
    pytest.param("2026-11-29T02:41:10Z WARN  auth login failed: bad password user=u-04211", id="login-failed"),
    pytest.param("botocore.credentials Found credentials in environment variables.", id="botocore-credentials"),
    pytest.param("Authorization failed for user u-1 (missing scope checkout:write)", id="authorization-in-prose"),
    pytest.param(
        "the Authorization header is stripped by the ingress before checkout-api", id="authorization-header-prose"
    ),
    pytest.param("Authorization: required for every /admin route", id="authorization-colon-prose"),
    pytest.param('WWW-Authenticate: Bearer realm="api", error="invalid_token"', id="www-authenticate"),
    pytest.param("GET https://payments.internal:8443/v1/charges?limit=20&cursor=ch_1Nx 200 88ms", id="url-plain"),
    pytest.param("connecting to postgres://pg-primary.internal:5432/ledger (pool 5/5)", id="url-without-userinfo"),
    pytest.param("git@github.com:acme/shop.git", id="git-ssh-remote"),
    pytest.param("ssh://deploy@bastion.internal:22/srv", id="url-user-without-password"),
    pytest.param("paged oncall-payments@example.com (PagerDuty incident Q1W2E3R4T5)", id="email"),
    pytest.param("http://[::1]:8080/healthz ok", id="ipv6-url"),
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_line_is_untouched(text: str) -> None:
    assert redact_text(text) == text


def test_the_benign_corpus_is_wide() -> None:
    assert len(BENIGN) >= 60


@pytest.mark.parametrize("log", SAMPLE_LOGS, ids=[p.name for p in SAMPLE_LOGS])
def test_every_sample_log_line_is_untouched(log: Path) -> None:
    text = log.read_text()
    changed = [line for line in text.splitlines() if redact_text(line) != line]
    assert changed == []
    assert redact_text(text) == text  # whole, as query_logs returns them


# ================================================================================ structures

CONFIG: dict[str, Any] = {
    "db": {"host": "pg-primary.internal", "port": 5432, "user": "ledger", "password": 483920, "pool_size": 5},
    "model": {"max_tokens": 1024, "api_key": "c8e1f4b2a9d7", "tokenizer": "cl100k_base"},
    "auth": {"token_ttl": 300, "jwt_secret": "s3cr3t-signing", "password_min_length": 12, "secret_name": "prod"},
    "slack": {"bot_token": SLACK_BOT, "signing_secret": ["old-4f1e", "new-9c2d"], "token_required": True},
    "smtp": {"pass": "m4il-pw", "password": None, "passwordFile": "/run/secrets/smtp"},
    "env": [{"name": "DB_PASSWORD", "value": "hunter2-env"}, {"name": "LOG_LEVEL", "value": "info"}],
    "headers": {"Authorization": "Bearer 8f1c2b7e9d4a6f3e0b5c7a9d2e4f6a8b", "Accept": "application/json"},
    "auths": {"registry.internal": {"auth": "ZGVwbG95OmRlcGxveS1wdw=="}},
    "secretKeyRef": {"name": "db-creds", "key": "password"},
    "note": "PGPASSWORD=hunter2-note",
    "private_key": pem("PRIVATE KEY"),
}


def test_structure_hides_values_under_secret_keys() -> None:
    out = redact_structure(CONFIG)
    assert out["db"] == {
        "host": "pg-primary.internal",
        "port": 5432,
        "user": "ledger",
        "password": "[REDACTED:secret-value]",
        "pool_size": 5,
    }
    assert out["model"] == {"max_tokens": 1024, "api_key": "[REDACTED:secret-value]", "tokenizer": "cl100k_base"}
    assert out["auth"] == {
        "token_ttl": 300,
        "jwt_secret": "[REDACTED:secret-value]",
        "password_min_length": 12,
        "secret_name": "prod",
    }
    assert out["slack"] == {
        "bot_token": "[REDACTED:slack]",
        "signing_secret": ["[REDACTED:secret-value]", "[REDACTED:secret-value]"],
        "token_required": True,
    }
    assert out["smtp"] == {"pass": "[REDACTED:secret-value]", "password": None, "passwordFile": "/run/secrets/smtp"}
    assert out["env"] == [
        {"name": "DB_PASSWORD", "value": "[REDACTED:secret-value]"},
        {"name": "LOG_LEVEL", "value": "info"},
    ]
    assert out["headers"] == {"Authorization": "Bearer [REDACTED:authorization]", "Accept": "application/json"}
    assert out["auths"] == {"registry.internal": {"auth": "[REDACTED:secret-value]"}}
    assert out["secretKeyRef"] == {"name": "db-creds", "key": "password"}
    assert out["private_key"] == "[REDACTED:pem]"


def test_structure_alone_leaves_free_text_to_redact_text() -> None:
    assert redact_structure(CONFIG)["note"] == "PGPASSWORD=hunter2-note"
    assert redact(CONFIG)["note"] == "PGPASSWORD=[REDACTED:secret-value]"


def test_redact_applies_structure_and_text_rules() -> None:
    out = redact(CONFIG)
    assert out == {**redact_structure(CONFIG), "note": "PGPASSWORD=[REDACTED:secret-value]"}
    rendered = json.dumps(out)
    for hidden in ("483920", "c8e1f4b2a9d7", "s3cr3t-signing", SLACK_BOT, "old-4f1e", "m4il-pw", "hunter2", FIRST):
        assert hidden not in rendered


def test_structure_does_not_change_its_input() -> None:
    before = json.dumps(CONFIG)
    redact(CONFIG)
    redact_structure(CONFIG)
    assert json.dumps(CONFIG) == before


@pytest.mark.parametrize(
    "key, value",
    [
        ("password", "${DB_PASSWORD}"),
        ("api_key", "<your key here>"),
        ("token", "{{ .Values.token }}"),
        ("client_secret", "********"),
        ("password", ""),
        ("secret", False),
        ("prompt_tokens", 1234),
        ("completion_tokens", "56"),
        ("token_ttl_s", 900),
        ("credentials_file", "~/.aws/credentials"),
    ],
    ids=["env", "angle", "template", "mask", "empty", "bool", "count", "count-as-string", "ttl", "file"],
)
def test_structure_keeps_references_and_settings(key: str, value: Any) -> None:
    assert redact_structure({key: value}) == {key: value}


def test_a_looked_up_value_is_redacted_under_its_key() -> None:
    # How read_config redacts one value it found by key path (`db.password`).
    assert redact_structure({"password": 1234})["password"] == "[REDACTED:secret-value]"
    assert redact_structure({"pool_size": 5})["pool_size"] == 5
