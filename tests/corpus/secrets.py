"""The secret corpus: one made-up secret per kind, with the line it usually appears in and the
config value and key it usually sits under.

Shapes come from public rule sets and vendors' documentation; each kind's `source` names them:
gitleaks' default rules (cited by rule id and file in its repository, github.com/gitleaks/gitleaks,
`cmd/generate/config/rules/<file>.go`, MIT; the rules are cited, not copied) and the vendor's own
description of the format. Lengths and alphabets follow those sources; every body is drawn at
import time from a pseudo-random generator seeded by name (`made_up`), so each run sees the same
made-up values and this file holds no complete token for secret scanners and push protection to
stop on (`tok` joins a vendor's prefix to a generated body).

Placement: a kind with a distinctive shape (a vendor prefix, a webhook URL, a PEM block) is put
beside no secret-looking word: its `line` reads "publishing with npm_... to registry.internal" and
its `key` is an innocent name. Redaction must find it by its shape. A kind that only its
surroundings give away gets the least context a real file or log line has, and a comment says so.

`secret` is the part that must never be shown: the token without the vendor's fixed, public
prefix (`npm_`, `hvs.`, `AGE-SECRET-KEY-1`), the password of a URL, the body of a PEM block. A leak
is any 8 consecutive characters of it (`leaks`).
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FORMATS: tuple[str, ...] = ("yaml", "json", "toml", "ini", "env", "properties")
WINDOW = 8  # a leak: this many consecutive characters of a secret's line

DIGITS = string.digits
HEX = "0123456789abcdef"
HEX_UPPER = HEX.upper()
LETTERS = string.ascii_letters
ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
WORD_DASH = ALNUM + "_-"  # base64url
BASE64 = ALNUM + "+/"
AWS_BASE32 = string.ascii_uppercase + "234567"  # access key ids after the 4-letter prefix
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()


def tok(prefix: str, body: str) -> str:
    """A token assembled at run time, so that the source holds no complete token."""
    return prefix + body


def made_up(seed: str, alphabet: str, length: int) -> str:
    """`length` characters of `alphabet`, the same on every run for the same `seed`."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


def made_up_bytes(seed: str, length: int) -> bytes:
    return random.Random(seed).randbytes(length)


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def b64url_json(data: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def uuid4_like(seed: str) -> str:
    h = made_up(seed, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


@dataclass(frozen=True)
class SecretKind:
    """One kind of secret, as it is found in the wild."""

    id: str
    secret: str  # what must never appear (any WINDOW consecutive characters of any of its lines)
    line: str  # the secret as it usually appears in text (a log line body, CLI output), built around `secret`
    value: str  # what a config file holds (the secret itself, or the URL or string holding it)
    key: str  # the config key it sits under (a dotted path into `document` when there is one)
    source: str  # where the shape comes from: gitleaks rule id and file, and/or the vendor's documentation
    formats: tuple[str, ...] = FORMATS  # the config formats the kind can exist in
    # The whole config document when the kind lives in a structure of its own (a Kubernetes Secret
    # manifest, a Docker config.json); otherwise the document is {key: value}.
    document: Mapping[str, Any] | None = field(default=None, hash=False)

    @property
    def multiline(self) -> bool:
        return "\n" in self.line

    def config(self) -> Mapping[str, Any]:
        return self.document if self.document is not None else {self.key: self.value}


def windows(secret: str) -> set[str]:
    """Every WINDOW-character stretch of every line of `secret` (windows never span a newline)."""
    return {line[i : i + WINDOW] for line in secret.split("\n") for i in range(len(line) - WINDOW + 1)}


def leaks(secret: str, text: str) -> list[str]:
    """The WINDOW-character stretches of `secret` found in `text`, or in any string inside it when
    it is JSON (decoded, so that an escaped `\\/` or `\\n` cannot hide one; JSON inside those
    strings, as a step log's rendered results are, is decoded in turn)."""
    wanted = windows(secret)
    found: set[str] = set()
    for reading in _readings(text, depth=0):
        found |= {w for w in wanted if w in reading}
    return sorted(found)


def _readings(text: str, depth: int) -> Iterator[str]:
    yield text
    if depth >= 4 or not text.lstrip().startswith(("{", "[", '"')):
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        return
    for string_ in _strings(parsed):
        yield from _readings(string_, depth + 1)


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


# ================================================================================ PEM blocks


def pem(label: str, der_prefix: bytes, seed: str, size: int, width: int = 64) -> tuple[str, str]:
    """A PEM block (RFC 7468) of made-up DER bytes that start as the real structure does, and its body."""
    der = der_prefix + made_up_bytes(seed, size - len(der_prefix))
    body = "\n".join(textwrap.wrap(b64(der), width))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


# SEQUENCE, version 0, INTEGER modulus (RFC 8017 RSAPrivateKey): bodies start "MIIEpAIBAAKCAQEA".
RSA_PEM, RSA_BODY = pem("RSA PRIVATE KEY", bytes.fromhex("308204a40201000282010100"), "rsa-private-key", 1192)
# PrivateKeyInfo with rsaEncryption (RFC 5208): bodies start "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".
PKCS8_DER = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7")
PKCS8_PEM, PKCS8_BODY = pem("PRIVATE KEY", PKCS8_DER, "pkcs8-private-key", 1217)
# ECPrivateKey for P-256 (RFC 5915): 121 bytes, bodies start "MHcCAQEEI".
EC_PEM, EC_BODY = pem("EC PRIVATE KEY", bytes.fromhex("30770201010420"), "ec-private-key", 121)
# openssh-key-v1 (PROTOCOL.key in openssh-portable), wrapped at 70 as ssh-keygen writes it.
OPENSSH_PEM, OPENSSH_BODY = pem("OPENSSH PRIVATE KEY", b"openssh-key-v1\x00", "openssh-private-key", 399, 70)
_PGP_BODY_LINES = textwrap.wrap(b64(b"\x95\x03\xc6\x04" + made_up_bytes("pgp-private-key-block", 1100)), 64)
PGP_BODY = "\n".join(_PGP_BODY_LINES)
# RFC 4880 ASCII armor: a blank line after the armor header, then the body and its CRC-24 line.
PGP_PEM = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + PGP_BODY
    + "\n="
    + made_up("pgp-crc", BASE64, 4)
    + "\n-----END PGP PRIVATE KEY BLOCK-----"
)
GCP_PEM, GCP_BODY = pem("PRIVATE KEY", PKCS8_DER, "gcp-service-account-json", 1217)

# ================================================================================ tokens

SLACK_BOT_SECRET = (
    f"{made_up('bot-team', DIGITS, 10)}-{made_up('bot-user', DIGITS, 13)}-{made_up('slack-bot-token', ALNUM, 24)}"
)
SLACK_USER_SECRET = (
    "-".join([made_up("user-a", DIGITS, 10), made_up("user-b", DIGITS, 13), made_up("user-c", DIGITS, 13)])
    + "-"
    + made_up("slack-user-token", HEX, 32)
)
SLACK_APP_SECRET = (
    f"1-A0{made_up('app-id', UPPER_ALNUM, 9)}-{made_up('app-n', DIGITS, 13)}-{made_up('slack-app-token', HEX, 64)}"
)
SLACK_CONFIG_SECRET = "1-Mi0y" + made_up("slack-config-token", ALNUM, 160)
SLACK_HOOK_SECRET = f"T0{made_up('hook-t', UPPER_ALNUM, 7)}/B0{made_up('hook-b', UPPER_ALNUM, 9)}/" + made_up(
    "slack-webhook-url", ALNUM, 24
)

AWS_KEY_ID_SECRET = made_up("aws-access-key-id", AWS_BASE32, 16)
AWS_PAIR_ID = tok("AKIA", made_up("aws-pair-id", AWS_BASE32, 16))
AWS_SECRET_KEY = made_up("aws-secret-access-key", BASE64, 40)
# STS session tokens are base64 protobuf that starts with "IQoJb3JpZ2luX2Vj" (origin_ec); the
# region name shows in it and so do runs of slashes.
AWS_SESSION_SECRET = (
    "E" + made_up("sts-a", ALNUM, 2) + "//////////wEaCXVzLWVhc3QtMSJHMEUCIQ" + made_up("aws-session-token", BASE64, 360)
)

GCP_KEY_SECRET = "Sy" + made_up("gcp-api-key", WORD_DASH, 33)
GCP_CLIENT_SECRET = made_up("gcp-oauth-client-secret", WORD_DASH, 28)
GCP_ACCESS_SECRET = "a0AeDClZ" + made_up("gcp-access-token", WORD_DASH, 200)
GCP_SERVICE_ACCOUNT: dict[str, str] = {
    "type": "service_account",
    "project_id": "shop-prod",
    "private_key_id": made_up("gcp-private-key-id", HEX, 40),
    "private_key": GCP_PEM + "\n",
    "client_email": "checkout@shop-prod.iam.gserviceaccount.com",
    "client_id": "1" + made_up("gcp-client-id", DIGITS, 20),
    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
    "token_uri": "https://oauth2.googleapis.com/token",
    "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
    "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/checkout%40shop-prod.iam.gserviceaccount.com",
    "universe_domain": "googleapis.com",
}

GH_CLASSIC_SECRET = made_up("github-classic-pat", ALNUM, 36)
GH_FINE_SECRET = "11" + made_up("gh-fine-a", UPPER_ALNUM, 20) + "_" + made_up("github-fine-grained-pat", ALNUM, 59)
GH_APP_SECRET = made_up("github-app-token", ALNUM, 36)
GL_PAT_SECRET = made_up("gitlab-pat", WORD_DASH, 20)
# Runner authentication tokens since GitLab 16 are routable: t<digit>_<27+ chars>.<2><7>.
GL_RUNNER_SECRET = "t3_" + made_up("gitlab-runner-token", ALNUM, 27) + ".01" + made_up("gl-runner-crc", LOWER_ALNUM, 7)

OPENAI_SECRET = made_up("openai-a", WORD_DASH, 74) + "T3BlbkFJ" + made_up("openai-project-key", WORD_DASH, 74)
ANTHROPIC_SECRET = made_up("anthropic-api-key", WORD_DASH, 93) + "AA"
STRIPE_LIVE_SECRET = "51" + made_up("stripe-live-secret-key", ALNUM, 97)
STRIPE_WEBHOOK_SECRET = made_up("stripe-webhook-secret", ALNUM, 32)

JWT_HEADER = b64url_json({"alg": "RS256", "kid": made_up("jwt-kid", HEX, 16), "typ": "JWT"})
JWT_SECRET = (
    b64url_json(
        {
            "iss": "https://auth.internal",
            "sub": "u-70239",
            "aud": "checkout",
            "exp": 1796000000,
            "jti": made_up("jwt-jti", ALNUM, 22),
        }
    )
    + "."
    + made_up("jwt", WORD_DASH, 342)  # an RS256 signature: 256 bytes, base64url
)
JWT = tok(JWT_HEADER + ".", JWT_SECRET)

PG_PASSWORD = made_up("url-password", ALNUM + "-_", 20)
REDIS_PASSWORD = made_up("url-slash-a", BASE64, 9) + "/" + made_up("url-password-with-slash", BASE64, 14)
BASIC_SECRET = b64("svc-deploy:" + made_up("basic-auth-header", ALNUM, 18))
BEARER_SECRET = made_up("bearer-token", WORD_DASH, 43)
CURL_PASSWORD = made_up("curl-user-password", ALNUM, 14) + "!"

NPM_SECRET = made_up("npm-token", ALNUM, 36)
PYPI_SECRET = "CJ" + made_up("pypi-token", WORD_DASH, 150)
VAULT_SERVICE_SECRET = "CAESI" + made_up("vault-service-token", WORD_DASH, 90)
VAULT_BATCH_SECRET = "AAAAAQ" + made_up("vault-batch-token", WORD_DASH, 150)
TWILIO_API_SECRET = made_up("twilio-api-key", HEX, 32)
TWILIO_AUTH_SECRET = made_up("twilio-auth-token", HEX, 32)
SENDGRID_SECRET = made_up("sg-a", WORD_DASH, 22) + "." + made_up("sendgrid-api-key", WORD_DASH, 43)
DATADOG_APP_SECRET = made_up("datadog-app-key", HEX, 40)
AGE_SECRET = made_up("age-secret-key", BECH32, 58)
DIGITALOCEAN_SECRET = made_up("digitalocean-pat", HEX, 64)
TELEGRAM_BOT_ID = made_up("telegram-id", DIGITS, 10)
TELEGRAM_SECRET = "AA" + made_up("telegram-bot-token", WORD_DASH, 33)
SENTRY_SECRET = made_up("sentry-dsn", HEX, 32)
DISCORD_SECRET = made_up("discord-webhook-url", WORD_DASH, 68)
TEAMS_SECRET = made_up("teams-webhook-url", LOWER_ALNUM, 32) + "/" + uuid4_like("teams-c")

K8S_SECRET = b64(
    f"postgres://checkout:{made_up('kubernetes-secret-data', ALNUM, 24)}@pg-primary.internal:5432/checkout"
)
DOCKER_SECRET = b64("ci-bot:" + made_up("docker-config-auth", ALNUM, 20))
AZURE_STORAGE_SECRET = b64(made_up_bytes("azure-storage-account-key", 64))  # 88 characters, "==" at the end

MAILCHIMP_SECRET = made_up("mailchimp-api-key", HEX, 32)
SHOPIFY_SECRET = made_up("shopify-access-token", HEX, 32)
HUGGINGFACE_SECRET = made_up("huggingface-token", LETTERS, 34)
LINEAR_SECRET = made_up("linear-api-key", ALNUM, 40)
DOPPLER_SECRET = made_up("doppler-token", ALNUM, 43)
GRAFANA_SECRET = made_up("grafana-service-account-token", ALNUM, 32) + "_" + made_up("grafana-crc", HEX, 8)
DATABRICKS_SECRET = made_up("databricks-token", HEX, 32)
ATLASSIAN_SECRET = "xFfGF0" + made_up("atlassian-api-token", WORD_DASH, 171) + "=" + made_up("atl-crc", HEX_UPPER, 8)
NEWRELIC_SECRET = made_up("newrelic-user-api-key", UPPER_ALNUM, 27)
POSTMAN_SECRET = made_up("pm-a", HEX, 24) + "-" + made_up("postman-api-key", HEX, 34)
# A 1Password service account token is "ops_" and the base64 of a JSON document
# (developer.1password.com/docs/service-accounts/security/).
ONEPASSWORD_SECRET = b64(
    json.dumps(
        {
            "signInAddress": "acme.1password.com",
            "userAuth": {
                "method": "SRPg-4096",
                "alg": "PBES2g-HS256",
                "iterations": 650000,
                "salt": made_up("op-salt", WORD_DASH, 22),
            },
            "email": made_up("op-email", LOWER_ALNUM, 13) + "@1passwordserviceaccounts.com",
            "srpX": made_up("op-srpx", HEX, 64),
            "muk": {
                "alg": "A256GCM",
                "ext": True,
                "k": made_up("1password-service-account-token", WORD_DASH, 43),
                "key_ops": ["encrypt", "decrypt"],
                "kty": "oct",
                "kid": "mp",
            },
            "secretKey": "A3-"
            + "-".join(made_up(f"op-sk-{i}", UPPER_ALNUM, n) for i, n in enumerate((6, 6, 5, 5, 5, 5))),
            "throttleSecret": {"seed": made_up("op-seed", HEX, 64), "uuid": made_up("op-uuid", UPPER_ALNUM, 26)},
            "deviceUuid": made_up("op-device", LOWER_ALNUM, 26),
        },
        separators=(",", ":"),
    )
).rstrip("=")
PULUMI_SECRET = made_up("pulumi-access-token", HEX, 40)
PLANETSCALE_SECRET = made_up("planetscale-token", ALNUM + "_", 43)
LOGIN_PASSWORD = made_up("password-after-secret-word", ALNUM, 20)
ROTATED_TOKEN = made_up("token-after-secret-word", ALNUM, 32)

GENERIC = "gitleaks generic-api-key, cmd/generate/config/rules/generic.go"

# ================================================================================ the kinds

KINDS: list[SecretKind] = [
    # ---- Slack
    SecretKind(
        id="slack-bot-token",
        secret=SLACK_BOT_SECRET,
        line=f"notifier: posting to #ops-alerts as {tok('xoxb-', SLACK_BOT_SECRET)} failed: not_in_channel",
        value=tok("xoxb-", SLACK_BOT_SECRET),
        key="bot",
        source="gitleaks slack-bot-token, cmd/generate/config/rules/slack.go; api.slack.com/authentication/token-types",
    ),
    SecretKind(
        id="slack-user-token",
        secret=SLACK_USER_SECRET,
        line=f"scim sync for workspace T0A1B2C3D with {tok('xoxp-', SLACK_USER_SECRET)} returned 429",
        value=tok("xoxp-", SLACK_USER_SECRET),
        key="workspace",
        source=(
            "gitleaks slack-user-token, cmd/generate/config/rules/slack.go; api.slack.com/authentication/token-types"
        ),
    ),
    SecretKind(
        id="slack-app-token",
        secret=SLACK_APP_SECRET,
        line=f"socket mode: opening a connection with {tok('xapp-', SLACK_APP_SECRET)}",
        value=tok("xapp-", SLACK_APP_SECRET),
        key="socket_mode",
        source="gitleaks slack-app-token, cmd/generate/config/rules/slack.go; api.slack.com/authentication/token-types",
    ),
    SecretKind(
        id="slack-config-token",
        secret=SLACK_CONFIG_SECRET,
        line=f"manifest export for A05QXPL2M8T ran with {tok('xoxe.xoxp-', SLACK_CONFIG_SECRET)} (valid for 12h)",
        value=tok("xoxe.xoxp-", SLACK_CONFIG_SECRET),
        key="manifest_client",
        source="gitleaks slack-config-access-token, cmd/generate/config/rules/slack.go; "
        "api.slack.com/authentication/config-tokens",
    ),
    SecretKind(
        id="slack-webhook-url",
        secret=SLACK_HOOK_SECRET,
        line=f"alertmanager notify: POST https://hooks.slack.com/services/{SLACK_HOOK_SECRET} 404 channel_is_archived",
        value=f"https://hooks.slack.com/services/{SLACK_HOOK_SECRET}",
        key="url",
        source="gitleaks slack-webhook-url, cmd/generate/config/rules/slack.go; api.slack.com/messaging/webhooks",
    ),
    # ---- AWS
    SecretKind(
        id="aws-access-key-id",
        secret=AWS_KEY_ID_SECRET,
        line=(
            f"s3:PutObject AccessDenied for {tok('AKIA', AWS_KEY_ID_SECRET)} on arn:aws:s3:::shop-receipts/2026/11/29/"
        ),
        value=tok("AKIA", AWS_KEY_ID_SECRET),
        key="identity",
        source="gitleaks aws-access-token, cmd/generate/config/rules/aws.go; "
        "docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids",
    ),
    # Context only: 40 characters of base64 are anything. What gives them away is the access key
    # id right before them, as the console's access key CSV download has them (no key name).
    SecretKind(
        id="aws-secret-access-key",
        secret=AWS_SECRET_KEY,
        line=f"accessKeys.csv: {AWS_PAIR_ID},{AWS_SECRET_KEY}",
        value=f"{AWS_PAIR_ID},{AWS_SECRET_KEY}",
        key="ci_deployer",
        source="AWS access key CSV (Access key ID,Secret access key), "
        "docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html; 40 characters as in "
        "gitleaks aws-access-token's documented example pair, cmd/generate/config/rules/aws.go",
    ),
    SecretKind(
        id="aws-session-token",
        secret=AWS_SESSION_SECRET,
        line="assumed arn:aws:iam::123456789012:role/ci-deployer as "
        f"{tok('IQoJb3JpZ2luX2Vj', AWS_SESSION_SECRET)} until 04:07:32Z",
        value=tok("IQoJb3JpZ2luX2Vj", AWS_SESSION_SECRET),
        key="sts",
        source="AWS STS Credentials.SessionToken, docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html "
        "(tokens issued since 2019 start IQoJb3JpZ2luX2Vj); no gitleaks rule",
    ),
    # ---- Google Cloud
    SecretKind(
        id="gcp-api-key",
        secret=GCP_KEY_SECRET,
        line=f"geocoder configured with {tok('AIza', GCP_KEY_SECRET)} for project shop-prod",
        value=tok("AIza", GCP_KEY_SECRET),
        key="maps",
        source="gitleaks gcp-api-key, cmd/generate/config/rules/gcp.go; cloud.google.com/docs/authentication/api-keys",
    ),
    SecretKind(
        id="gcp-oauth-client-secret",
        secret=GCP_CLIENT_SECRET,
        line=f"google client 1234567890-a1b2c3.apps.googleusercontent.com loaded ({tok('GOCSPX-', GCP_CLIENT_SECRET)})",
        value=tok("GOCSPX-", GCP_CLIENT_SECRET),
        key="google_client",
        source="GitHub secret scanning google_oauth_client_secret (GOCSPX- and 28 characters), "
        "docs.github.com/en/code-security/secret-scanning/introduction/supported-secret-scanning-patterns",
    ),
    SecretKind(
        id="gcp-access-token",
        secret=GCP_ACCESS_SECRET,
        line=f"GET https://storage.googleapis.com/storage/v1/b/shop-assets with {tok('ya29.', GCP_ACCESS_SECRET)} 401",
        value=tok("ya29.", GCP_ACCESS_SECRET),
        key="upstream",
        source="Google OAuth 2.0 access tokens (ya29.), developers.google.com/identity/protocols/oauth2; "
        "GitHub secret scanning google_oauth_access_token",
    ),
    # The service account key file as `gcloud iam service-accounts keys create` writes it
    # (cloud.google.com/iam/docs/keys-create-delete), whose own keys are the only words around the
    # PEM; in a config, the file's JSON held as a string.
    SecretKind(
        id="gcp-service-account-json",
        secret=GCP_BODY,
        line=json.dumps(GCP_SERVICE_ACCOUNT, indent=2),
        value=json.dumps(GCP_SERVICE_ACCOUNT),
        key="service_account",
        source="gitleaks gcp-service-account, cmd/generate/config/rules/gcp.go and private-key, "
        "cmd/generate/config/rules/privatekey.go; cloud.google.com/iam/docs/keys-create-delete",
    ),
    # ---- GitHub, GitLab
    SecretKind(
        id="github-classic-pat",
        secret=GH_CLASSIC_SECRET,
        line=f"git push via {tok('ghp_', GH_CLASSIC_SECRET)} to github.com/acme/shop rejected: protected branch",
        value=tok("ghp_", GH_CLASSIC_SECRET),
        key="remote",
        source="gitleaks github-pat, cmd/generate/config/rules/github.go; "
        "github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/",
    ),
    SecretKind(
        id="github-fine-grained-pat",
        secret=GH_FINE_SECRET,
        line=f"renovate: using {tok('github_pat_', GH_FINE_SECRET)} for github.com/acme",
        value=tok("github_pat_", GH_FINE_SECRET),
        key="platform",
        source="gitleaks github-fine-grained-pat, cmd/generate/config/rules/github.go; "
        "docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
    ),
    SecretKind(
        id="github-app-token",
        secret=GH_APP_SECRET,
        line=f"installation 4812 issued {tok('ghs_', GH_APP_SECRET)}, valid until 03:37:32Z",
        value=tok("ghs_", GH_APP_SECRET),
        key="installation",
        source="gitleaks github-app-token, cmd/generate/config/rules/github.go; "
        "docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app",
    ),
    SecretKind(
        id="gitlab-pat",
        secret=GL_PAT_SECRET,
        line=f"GET https://gitlab.internal/api/v4/projects/42 as {tok('glpat-', GL_PAT_SECRET)}: 401",
        value=tok("glpat-", GL_PAT_SECRET),
        key="gitlab",
        source="gitleaks gitlab-pat, cmd/generate/config/rules/gitlab.go; docs.gitlab.com/ee/security/tokens/",
    ),
    SecretKind(
        id="gitlab-runner-token",
        secret=GL_RUNNER_SECRET,
        line=f"gitlab-runner: checking for jobs... {tok('glrt-', GL_RUNNER_SECRET)} received job 51234",
        value=tok("glrt-", GL_RUNNER_SECRET),
        key="runner",
        source="gitleaks gitlab-runner-authentication-token-routable, cmd/generate/config/rules/gitlab.go; "
        "docs.gitlab.com/ee/security/tokens/",
    ),
    # ---- model vendors, payments
    SecretKind(
        id="openai-project-key",
        secret=OPENAI_SECRET,
        line=f"openai client init with {tok('sk-proj-', OPENAI_SECRET)} (org-shop)",
        value=tok("sk-proj-", OPENAI_SECRET),
        key="client",
        source="gitleaks openai-api-key, cmd/generate/config/rules/openai.go; "
        "platform.openai.com/docs/api-reference/authentication",
    ),
    SecretKind(
        id="anthropic-api-key",
        secret=ANTHROPIC_SECRET,
        line=f"anthropic client init with {tok('sk-ant-api03-', ANTHROPIC_SECRET)}, model claude-sonnet",
        value=tok("sk-ant-api03-", ANTHROPIC_SECRET),
        key="provider",
        source="gitleaks anthropic-api-key, cmd/generate/config/rules/anthropic.go; docs.anthropic.com/en/api/overview",
    ),
    SecretKind(
        id="stripe-live-secret-key",
        secret=STRIPE_LIVE_SECRET,
        line=f"stripe charge ch_3NxUk7 failed for {tok('sk_live_', STRIPE_LIVE_SECRET)}: rate_limit",
        value=tok("sk_live_", STRIPE_LIVE_SECRET),
        key="payments",
        source="gitleaks stripe-access-token, cmd/generate/config/rules/stripe.go; docs.stripe.com/keys",
    ),
    SecretKind(
        id="stripe-webhook-secret",
        secret=STRIPE_WEBHOOK_SECRET,
        line=f"webhook endpoint we_1NxUk7 verifies signatures with {tok('whsec_', STRIPE_WEBHOOK_SECRET)}",
        value=tok("whsec_", STRIPE_WEBHOOK_SECRET),
        key="endpoint",
        source="Stripe webhook signing (whsec_), docs.stripe.com/webhooks#verify-events; "
        "GitHub secret scanning stripe_webhook_signing_secret",
    ),
    SecretKind(
        id="jwt",
        secret=JWT_SECRET,
        line=f"verify failed for {JWT}: signature expired",
        value=JWT,
        key="value",
        source="gitleaks jwt, cmd/generate/config/rules/jwt.go; RFC 7519",
    ),
    # ---- PEM private keys
    SecretKind(
        id="rsa-private-key",
        secret=RSA_BODY,
        line=RSA_PEM,
        value=RSA_PEM,
        key="tls",
        source="gitleaks private-key, cmd/generate/config/rules/privatekey.go; RFC 7468, RFC 8017 (RSAPrivateKey)",
    ),
    SecretKind(
        id="pkcs8-private-key",
        secret=PKCS8_BODY,
        line=PKCS8_PEM,
        value=PKCS8_PEM,
        key="signing",
        source="gitleaks private-key, cmd/generate/config/rules/privatekey.go; RFC 7468, RFC 5208 (PrivateKeyInfo)",
    ),
    SecretKind(
        id="ec-private-key",
        secret=EC_BODY,
        line=EC_PEM,
        value=EC_PEM,
        key="apns",
        source="gitleaks private-key, cmd/generate/config/rules/privatekey.go; RFC 5915 (ECPrivateKey)",
    ),
    SecretKind(
        id="openssh-private-key",
        secret=OPENSSH_BODY,
        line=OPENSSH_PEM,
        value=OPENSSH_PEM,
        key="deploy",
        source="gitleaks private-key, cmd/generate/config/rules/privatekey.go; "
        "openssh-portable PROTOCOL.key (openssh-key-v1)",
    ),
    SecretKind(
        id="pgp-private-key-block",
        secret=PGP_BODY,
        line=PGP_PEM,
        value=PGP_PEM,
        key="release_signing",
        source="gitleaks private-key, cmd/generate/config/rules/privatekey.go; RFC 4880 section 6.2 (ASCII armor)",
    ),
    # ---- URLs, headers
    SecretKind(
        id="url-password",
        secret=PG_PASSWORD,
        line=f"connecting to postgres://ledger:{PG_PASSWORD}@pg-primary.internal:5432/ledger?sslmode=require",
        value=f"postgres://ledger:{PG_PASSWORD}@pg-primary.internal:5432/ledger?sslmode=require",
        key="url",
        source="RFC 3986 section 3.2.1 (userinfo); "
        "postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS",
    ),
    # Context: a URL's userinfo, whose password holds a `/` (not percent-encoded, as people write them).
    SecretKind(
        id="url-password-with-slash",
        secret=REDIS_PASSWORD,
        line=f"redis reconnect to redis://:{REDIS_PASSWORD}@cache.internal:6379/0 (attempt 3)",
        value=f"redis://:{REDIS_PASSWORD}@cache.internal:6379/0",
        key="url",
        source="RFC 3986 section 3.2.1 (userinfo); redis URI scheme, iana.org/assignments/uri-schemes/prov/redis",
    ),
    # Context: the Authorization header (curl -v prints sent headers after "> ").
    SecretKind(
        id="basic-auth-header",
        secret=BASIC_SECRET,
        line=f"> Authorization: Basic {BASIC_SECRET}",
        value=f"Basic {BASIC_SECRET}",
        key="Authorization",
        source="RFC 7617 (Basic); curl -v request header output",
    ),
    # Context: curl's -u user:password, as shell history, CI logs and runbooks show it.
    SecretKind(
        id="curl-user-password",
        secret=CURL_PASSWORD,
        line=f"+ curl -sf -u deploy:{CURL_PASSWORD} https://nexus.internal/service/rest/v1/status",
        value=f"curl -u deploy:{CURL_PASSWORD} https://nexus.internal/service/rest/v1/status",
        key="healthcheck",
        source="curl(1) --user <user:password>; everything.curl.dev/usingcurl/authentication",
    ),
    # Context: the Authorization header; an opaque token has no shape of its own.
    SecretKind(
        id="bearer-token",
        secret=BEARER_SECRET,
        line=f"> Authorization: Bearer {BEARER_SECRET}",
        value=f"Bearer {BEARER_SECRET}",
        key="Authorization",
        source="RFC 6750 section 2.1 (Bearer); curl -v request header output",
    ),
    # ---- package registries, secret stores
    SecretKind(
        id="npm-token",
        secret=NPM_SECRET,
        line=f"publishing with {tok('npm_', NPM_SECRET)} to registry.internal",
        value=tok("npm_", NPM_SECRET),
        key="registry",
        source="gitleaks npm-access-token, cmd/generate/config/rules/npm.go; docs.npmjs.com/about-access-tokens",
    ),
    SecretKind(
        id="pypi-token",
        secret=PYPI_SECRET,
        line=f"uploading shop_sdk-2.4.1.tar.gz to upload.pypi.org as {tok('pypi-AgEIcHlwaS5vcmc', PYPI_SECRET)}",
        value=tok("pypi-AgEIcHlwaS5vcmc", PYPI_SECRET),
        key="index",
        source="gitleaks pypi-upload-token, cmd/generate/config/rules/pypi.go; pypi.org/help/#apitoken",
    ),
    SecretKind(
        id="vault-service-token",
        secret=VAULT_SERVICE_SECRET,
        line=f"vault lease renew with {tok('hvs.', VAULT_SERVICE_SECRET)}: permission denied",
        value=tok("hvs.", VAULT_SERVICE_SECRET),
        key="vault",
        source="gitleaks vault-service-token, cmd/generate/config/rules/hashicorp_vault.go; "
        "developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
    ),
    SecretKind(
        id="vault-batch-token",
        secret=VAULT_BATCH_SECRET,
        line=f"vault kv get -address=https://vault.internal:8200 with {tok('hvb.', VAULT_BATCH_SECRET)}: 403",
        value=tok("hvb.", VAULT_BATCH_SECRET),
        key="vault",
        source="gitleaks vault-batch-token, cmd/generate/config/rules/hashicorp_vault.go; "
        "developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
    ),
    # ---- messaging, observability
    SecretKind(
        id="twilio-api-key",
        secret=TWILIO_API_SECRET,
        line=f"twilio messages.create via {tok('SK', TWILIO_API_SECRET)}: 20003",
        value=tok("SK", TWILIO_API_SECRET),
        key="sms",
        source="gitleaks twilio-api-key, cmd/generate/config/rules/twilio.go; twilio.com/docs/iam/api-keys",
    ),
    # Context only: 32 hex characters; the variable name Twilio's docs use is what shows it.
    SecretKind(
        id="twilio-auth-token",
        secret=TWILIO_AUTH_SECRET,
        line=f"env: TWILIO_ACCOUNT_SID=AC{made_up('twilio-sid', HEX, 32)} TWILIO_AUTH_TOKEN={TWILIO_AUTH_SECRET}",
        value=TWILIO_AUTH_SECRET,
        key="auth_token",
        source="Twilio Account SID and Auth Token, twilio.com/docs/iam/credentials/api",
    ),
    SecretKind(
        id="sendgrid-api-key",
        secret=SENDGRID_SECRET,
        line=f"mail send through {tok('SG.', SENDGRID_SECRET)} -> 401",
        value=tok("SG.", SENDGRID_SECRET),
        key="mail",
        source="gitleaks sendgrid-api-token, cmd/generate/config/rules/sendgrid.go; "
        "twilio.com/docs/sendgrid/ui/account-and-settings/api-keys",
    ),
    # Context only: 40 hex characters under the variable and key names Datadog documents.
    SecretKind(
        id="datadog-app-key",
        secret=DATADOG_APP_SECRET,
        line=f"env: DD_SITE=datadoghq.eu DD_APP_KEY={DATADOG_APP_SECRET}",
        value=DATADOG_APP_SECRET,
        key="application_key",
        source="gitleaks datadog-access-token, cmd/generate/config/rules/datadog.go; "
        "docs.datadoghq.com/account_management/api-app-keys/",
    ),
    SecretKind(
        id="age-secret-key",
        secret=AGE_SECRET,
        line=f"sops: loaded age identity {tok('AGE-SECRET-KEY-1', AGE_SECRET)}",
        value=tok("AGE-SECRET-KEY-1", AGE_SECRET),
        key="identity",
        source="gitleaks age-secret-key, cmd/generate/config/rules/age.go; age-encryption.org/v1",
    ),
    SecretKind(
        id="digitalocean-pat",
        secret=DIGITALOCEAN_SECRET,
        line=f"doctl compute droplet list with {tok('dop_v1_', DIGITALOCEAN_SECRET)}: 401",
        value=tok("dop_v1_", DIGITALOCEAN_SECRET),
        key="context",
        source="gitleaks digitalocean-pat, cmd/generate/config/rules/digitalocean.go; "
        "docs.digitalocean.com/reference/api/create-personal-access-token/",
    ),
    SecretKind(
        id="telegram-bot-token",
        secret=TELEGRAM_SECRET,
        line=f"POST https://api.telegram.org/bot{TELEGRAM_BOT_ID}:{TELEGRAM_SECRET}/sendMessage 200",
        value=f"{TELEGRAM_BOT_ID}:{TELEGRAM_SECRET}",
        key="chat_bot",
        source="gitleaks telegram-bot-api-token, cmd/generate/config/rules/telegram.go; "
        "core.telegram.org/bots/api#authorizing-your-bot",
    ),
    # Context: the public key in a DSN's userinfo; it lets anyone send events to the project.
    SecretKind(
        id="sentry-dsn",
        secret=SENTRY_SECRET,
        line=f"sentry init dsn=https://{SENTRY_SECRET}@o4507261234567890.ingest.us.sentry.io/4507261234567891",
        value=f"https://{SENTRY_SECRET}@o4507261234567890.ingest.us.sentry.io/4507261234567891",
        key="dsn",
        source="Sentry DSN, docs.sentry.io/concepts/key-terms/dsn-explainer/; no gitleaks rule (sentry.go has "
        "sntrys_ and sntryu_ tokens)",
    ),
    # Context: the webhook URL; its last path segment is the token.
    SecretKind(
        id="discord-webhook-url",
        secret=DISCORD_SECRET,
        line=f"notify discord: POST https://discord.com/api/webhooks/1311234567890123456/{DISCORD_SECRET} 204",
        value=f"https://discord.com/api/webhooks/1311234567890123456/{DISCORD_SECRET}",
        key="url",
        source="Discord Execute Webhook (/webhooks/{webhook.id}/{webhook.token}), "
        "discord.com/developers/docs/resources/webhook#execute-webhook",
    ),
    # Context: the incoming webhook URL; the IncomingWebhook segments are the credential.
    SecretKind(
        id="teams-webhook-url",
        secret=TEAMS_SECRET,
        line="notify teams: POST https://acme.webhook.office.com/webhookb2/"
        f"{uuid4_like('teams-a')}@{uuid4_like('teams-b')}/IncomingWebhook/{TEAMS_SECRET} 200",
        value=f"https://acme.webhook.office.com/webhookb2/{uuid4_like('teams-a')}@{uuid4_like('teams-b')}"
        f"/IncomingWebhook/{TEAMS_SECRET}",
        key="url",
        source="gitleaks microsoft-teams-webhook, cmd/generate/config/rules/teams.go; "
        "learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook",
    ),
    # Context: a `kind: Secret` manifest whose `data:` holds base64, as `kubectl get secret -o yaml`
    # prints it (keys sorted, so `data:` comes before `kind:`). The data key names no secret.
    SecretKind(
        id="kubernetes-secret-data",
        secret=K8S_SECRET,
        line="\n".join(
            [
                "apiVersion: v1",
                "data:",
                f"  DATABASE_URL: {K8S_SECRET}",
                "  REDIS_HOST: Y2FjaGUuaW50ZXJuYWw=",
                "kind: Secret",
                "metadata:",
                "  creationTimestamp: '2026-10-19T08:12:44Z'",
                "  name: checkout-env",
                "  namespace: shop",
                "type: Opaque",
            ]
        ),
        value=K8S_SECRET,
        key="data.DATABASE_URL",
        source="gitleaks kubernetes-secret-yaml, cmd/generate/config/rules/kubernetes.go; "
        "kubernetes.io/docs/concepts/configuration/secret/",
        formats=("yaml", "json"),
        document={
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "checkout-env", "namespace": "shop"},
            "type": "Opaque",
            "data": {"DATABASE_URL": K8S_SECRET, "REDIS_HOST": "Y2FjaGUuaW50ZXJuYWw="},
        },
    ),
    # Context: `"auth"` in a Docker config.json, base64 of user:password; in the log line it is
    # text, outside any parsed structure.
    SecretKind(
        id="docker-config-auth",
        secret=DOCKER_SECRET,
        line=f'docker login succeeded, wrote {{"auths":{{"registry.internal:5000":{{"auth":"{DOCKER_SECRET}"}}}}}}',
        value=DOCKER_SECRET,
        key="auths.registry.internal:5000.auth",
        source="Docker config.json auths, docs.docker.com/reference/cli/docker/login/#credential-stores",
        formats=("json", "yaml"),
        document={"auths": {"registry.internal:5000": {"auth": DOCKER_SECRET}}},
    ),
    # Context: the connection string's AccountKey; 88 characters of base64 have no shape of their own.
    SecretKind(
        id="azure-storage-account-key",
        secret=AZURE_STORAGE_SECRET,
        line="blob client from DefaultEndpointsProtocol=https;AccountName=shopassets;"
        f"AccountKey={AZURE_STORAGE_SECRET};EndpointSuffix=core.windows.net",
        value=f"DefaultEndpointsProtocol=https;AccountName=shopassets;AccountKey={AZURE_STORAGE_SECRET};"
        "EndpointSuffix=core.windows.net",
        key="connection_string",
        source="learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string; "
        "no gitleaks rule (azure.go has AD client secrets only)",
    ),
    # Context: the vendor's name, which gitleaks' semi-generic rule also requires.
    SecretKind(
        id="mailchimp-api-key",
        secret=MAILCHIMP_SECRET,
        line=f"mailchimp audience sync with {MAILCHIMP_SECRET}-us21 failed: 401",
        value=f"{MAILCHIMP_SECRET}-us21",
        key="mailchimp",
        source="gitleaks mailchimp-api-key, cmd/generate/config/rules/mailchimp.go; "
        "mailchimp.com/developer/marketing/guides/quick-start/",
    ),
    SecretKind(
        id="shopify-access-token",
        secret=SHOPIFY_SECRET,
        line="GET https://acme-shop.myshopify.com/admin/api/2024-10/orders.json with "
        f"{tok('shpat_', SHOPIFY_SECRET)} 401",
        value=tok("shpat_", SHOPIFY_SECRET),
        key="storefront",
        source="gitleaks shopify-access-token, cmd/generate/config/rules/shopify.go; "
        "shopify.dev/docs/apps/build/authentication-authorization/access-tokens",
    ),
    SecretKind(
        id="huggingface-token",
        secret=HUGGINGFACE_SECRET,
        line=f"hub download meta-llama/Llama-3.1-8B as {tok('hf_', HUGGINGFACE_SECRET)}: 403 gated repo",
        value=tok("hf_", HUGGINGFACE_SECRET),
        key="hub",
        source="gitleaks huggingface-access-token, cmd/generate/config/rules/huggingface.go; "
        "huggingface.co/docs/hub/security-tokens",
    ),
    SecretKind(
        id="linear-api-key",
        secret=LINEAR_SECRET,
        line=f"linear issue sync via {tok('lin_api_', LINEAR_SECRET)} -> 400",
        value=tok("lin_api_", LINEAR_SECRET),
        key="tracker",
        source="gitleaks linear-api-key, cmd/generate/config/rules/linear.go; linear.app/developers/graphql",
    ),
    SecretKind(
        id="doppler-token",
        secret=DOPPLER_SECRET,
        line=f"doppler run --project shop --config prd with {tok('dp.pt.', DOPPLER_SECRET)}",
        value=tok("dp.pt.", DOPPLER_SECRET),
        key="doppler",
        source="gitleaks doppler-api-token, cmd/generate/config/rules/doppler.go; "
        "docs.doppler.com/reference/auth-token-formats",
    ),
    SecretKind(
        id="grafana-service-account-token",
        secret=GRAFANA_SECRET,
        line=f"grafana dashboard provisioning with {tok('glsa_', GRAFANA_SECRET)} -> 403",
        value=tok("glsa_", GRAFANA_SECRET),
        key="grafana",
        source="gitleaks grafana-service-account-token, cmd/generate/config/rules/grafana.go; "
        "grafana.com/docs/grafana/latest/administration/service-accounts/",
    ),
    SecretKind(
        id="databricks-token",
        secret=DATABRICKS_SECRET,
        line=f"databricks jobs run-now --job-id 88 using {tok('dapi', DATABRICKS_SECRET)}",
        value=tok("dapi", DATABRICKS_SECRET),
        key="workspace",
        source="gitleaks databricks-api-token, cmd/generate/config/rules/databricks.go; "
        "docs.databricks.com/en/dev-tools/auth/pat.html",
    ),
    SecretKind(
        id="atlassian-api-token",
        secret=ATLASSIAN_SECRET,
        line=f"jira issue create ACME-812 as ops@acme.example with {tok('ATATT3', ATLASSIAN_SECRET)}: 401",
        value=tok("ATATT3", ATLASSIAN_SECRET),
        key="jira",
        source="gitleaks atlassian-api-token, cmd/generate/config/rules/atlassian.go; "
        "support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
    ),
    SecretKind(
        id="newrelic-user-api-key",
        secret=NEWRELIC_SECRET,
        line=f"newrelic nerdgraph query with {tok('NRAK-', NEWRELIC_SECRET)} -> 403",
        value=tok("NRAK-", NEWRELIC_SECRET),
        key="nerdgraph",
        source="gitleaks new-relic-user-api-key, cmd/generate/config/rules/newrelic.go; "
        "docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/",
    ),
    SecretKind(
        id="postman-api-key",
        secret=POSTMAN_SECRET,
        line=f"postman collection export via {tok('PMAK-', POSTMAN_SECRET)}",
        value=tok("PMAK-", POSTMAN_SECRET),
        key="postman",
        source="gitleaks postman-api-token, cmd/generate/config/rules/postman.go; "
        "learning.postman.com/docs/developer/postman-api/authentication/",
    ),
    SecretKind(
        id="1password-service-account-token",
        secret=ONEPASSWORD_SECRET,
        line=f"op vault list with {tok('ops_', ONEPASSWORD_SECRET)}: 401",
        value=tok("ops_", ONEPASSWORD_SECRET),
        key="op",
        source="gitleaks 1password-service-account-token, cmd/generate/config/rules/1password.go; "
        "developer.1password.com/docs/service-accounts/security/",
    ),
    SecretKind(
        id="pulumi-access-token",
        secret=PULUMI_SECRET,
        line=f"pulumi login https://api.pulumi.com as {tok('pul-', PULUMI_SECRET)}",
        value=tok("pul-", PULUMI_SECRET),
        key="backend",
        source="gitleaks pulumi-api-token, cmd/generate/config/rules/pulumi.go; "
        "pulumi.com/docs/pulumi-cloud/access-management/access-tokens/",
    ),
    SecretKind(
        id="planetscale-token",
        secret=PLANETSCALE_SECRET,
        line=f"pscale deploy-request create shop main with {tok('pscale_tkn_', PLANETSCALE_SECRET)}: 403",
        value=tok("pscale_tkn_", PLANETSCALE_SECRET),
        key="planetscale",
        source="gitleaks planetscale-api-token, cmd/generate/config/rules/planetscale.go; "
        "planetscale.com/docs/concepts/service-tokens",
    ),
    # ---- high-entropy strings next to secret-ish words, without `=` or `:` between them
    # Context: the word before it is all there is.
    SecretKind(
        id="password-after-secret-word",
        secret=LOGIN_PASSWORD,
        line=f"login with password {LOGIN_PASSWORD}: ok",
        value=f"login with password {LOGIN_PASSWORD}: ok",
        key="note",
        source=GENERIC,
    ),
    # Context: the word before it is all there is.
    SecretKind(
        id="token-after-secret-word",
        secret=ROTATED_TOKEN,
        line=f"rotated token {ROTATED_TOKEN} for svc-ledger",
        value=f"rotated token {ROTATED_TOKEN} for svc-ledger",
        key="note",
        source=GENERIC,
    ),
]

BY_ID: dict[str, SecretKind] = {kind.id: kind for kind in KINDS}
