"""What stands where a secret was, and the values that need nothing standing in for them.

Every kind of marker is a `Kind`, so the whole set of texts redaction can write is known: a
filter that is sure not to touch any of them (`marker_free`) sees the same lines in raw and in
redacted text wherever it matches, which is what lets query_logs search raw text first and judge
only the lines it found in their redacted form.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Kind(StrEnum):
    """What a marker says was there: `[REDACTED:github]`."""

    aws = "aws"
    gcp = "gcp"
    azure = "azure"
    slack = "slack"
    slack_webhook = "slack-webhook"
    discord_webhook = "discord-webhook"
    teams_webhook = "teams-webhook"
    github = "github"
    gitlab = "gitlab"
    openai = "openai"
    anthropic = "anthropic"
    huggingface = "huggingface"
    stripe = "stripe"
    square = "square"
    shopify = "shopify"
    twilio = "twilio"
    sendgrid = "sendgrid"
    mailchimp = "mailchimp"
    mailgun = "mailgun"
    npm = "npm"
    pypi = "pypi"
    rubygems = "rubygems"
    vault = "vault"
    doppler = "doppler"
    onepassword = "1password"
    age = "age"
    digitalocean = "digitalocean"
    databricks = "databricks"
    grafana = "grafana"
    newrelic = "newrelic"
    sentry = "sentry"
    atlassian = "atlassian"
    linear = "linear"
    postman = "postman"
    pulumi = "pulumi"
    planetscale = "planetscale"
    terraform = "hashicorp"  # not "terraform": level words (err) must never be inside a marker
    heroku = "heroku"
    telegram = "telegram"
    dynatrace = "dt-api"  # not "dynatrace": level words (trace) must never be inside a marker
    sourcegraph = "sourcegraph"
    jwt = "jwt"
    pem = "pem"
    url_credentials = "url-credentials"
    authorization = "authorization"
    docker_auth = "docker-auth"
    kubernetes_secret = "kubernetes-secret"
    vendor_key = "vendor-key"
    secret_value = "secret-value"


def marker(kind: Kind) -> str:
    return f"[REDACTED:{kind.value}]"


MARKER = re.compile(r"\[REDACTED:[\w-]+\]")
# Only markers and the white space or escaped line ends between them.
_MARKERS_ONLY = re.compile(r"(?:\[REDACTED:[\w-]+\]|\\[nrt]|\s)+")
_MARKER_TEXTS = tuple(marker(kind).lower() for kind in Kind)


def marker_free(needle: str) -> bool:
    """Whether `needle` (lower case) can only ever be found in text that redaction left as it was.

    A needle that holds a bracket could straddle a marker's edge, and one that is part of a
    marker (`aws`, `redacted`) could be found in the marker itself; any other occurrence in
    redacted text lies in a stretch copied unchanged from the raw text."""
    if not needle or "[" in needle or "]" in needle:
        return False
    return not any(needle in text for text in _MARKER_TEXTS)


# Values that cannot authenticate: references to where the secret lives, masks, nothing.
_HARMLESS_VALUE = re.compile(
    r"(?i:true|false|yes|no|on|off|null|none|nil|undefined|~)"
    r"|<[^<>]*>"  # <your key here>
    r"|\$[A-Z_][A-Z0-9_]*"  # $DB_PASSWORD; upper case only, `$ecret99` is a password
    r"|\$\{[A-Za-z_][\w.]*\}"  # ${DB_PASSWORD}, ${db.password}; not ${X:-default}, whose default is a value
    r"|\$\{(?:env|file|vault|ssm|secrets?|aws|gcp|azure|k8s)[.:][^}\s]+\}"
    r"|\$?\{\{[^{}]*\}\}"  # {{ .Values.token }}, ${{ secrets.TOKEN }}
    r"|%[A-Za-z_]\w*%"  # %DB_PASSWORD%
    r"|\*{3,}|x{3,}|X{3,}|•{3,}"
    r"|\[?(?i:redacted|hidden|filtered|masked)\]?"
    r"|(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?"  # a file that holds the secret
    r"|arn:aws[\w-]*:[\w-]+:\S*"  # an ARN that names a stored secret
    r"|[|>][-+]?\d?"  # a YAML block scalar: the value is on the next lines
    r"|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*[(\[]"  # code: os.environ[ / os.getenv(
    r"|process\.env\.\w+"
    r"|\((?:sensitive(?: value)?|known after apply)\)"  # Terraform's plan output masks values so
)


def markers_only(value: str) -> bool:
    """Whether a value holds nothing left to hide: no text, an empty quoted string, or markers only."""
    value = value.strip()
    return value in ("", '""', "''") or _MARKERS_ONLY.fullmatch(value) is not None


def harmless(value: str) -> bool:
    """Whether a value cannot authenticate: a reference, a mask, nothing, or markers only.

    Only a value that is wholly markers (and line-end escapes: `"[REDACTED:pem]\\n"`) was dealt
    with already; `Credential=[REDACTED:aws]/..., Signature=...` still holds a secret."""
    value = value.strip()
    # `(using password: YES)`: the bracket may close the sentence, not the value.
    return any(
        not text or _MARKERS_ONLY.fullmatch(text) is not None or _HARMLESS_VALUE.fullmatch(text) is not None
        for text in {value, value.rstrip(")]")}
    )
