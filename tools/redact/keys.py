"""Key names: which say that the value beside them is a secret, and which only describe one.

One judgement for every place a key is seen: `password = x` in text, `{"password": 1234}` in a
parsed file, `name: DB_PASSWORD` + `value: x` in a Kubernetes env list.
"""

from __future__ import annotations

import functools
import re

from .markers import Kind

# A glued prefix is allowed (PGPASSWORD, AUTHTOKEN, dbpassword); `pass`, `pwd` and `sig` only as
# whole words (DB_PASS, dbPass, smtp_pwd, ?sig=), since as substrings they are in bypass,
# compass, OLDPWD, signal. `app_key`/`application_key` are Datadog's second credential,
# `license_key` New Relic's (newrelic.yml), `admin_key` Algolia's, `integration_key` PagerDuty's,
# `insert_key`/`ingest_key` New Relic's and Honeycomb's.
SECRET_WORD = (
    r"(?:passw(?:or)?d|passphrase|secret|token|credential|creds|signature"
    r"|(?:api|access|private|account|signing|encryption|master|client|app|application|admin|ingest|insert"
    r"|integration|licen[cs]e)[_.-]?key"
    r"|(?<![a-z])(?:pass|pwd|sig)(?![a-z])|(?-i:Pass|Pwd|Sig)(?![a-z]))"
)
_SECRET_WORD_RE = re.compile(SECRET_WORD, re.I)
# Every secret word holds one of these (lower case): the cheap test before the patterns run.
SECRET_NEEDLES = ("pass", "pwd", "secret", "token", "cred", "key", "sig")
# Words that contain a secret word and are not about secrets.
_NOT_SECRET_WORDS = re.compile(r"(?i)tokeni[sz][a-z]*|secretar[a-z]*|passwordless|pass[_.-]?thr(?:ough|u)")
# A key whose last word is one of these describes a secret rather than holding it: `token_ttl`,
# `password_min_length`, `secret_name`, `password_file`, `token_url`, `token_type: Bearer`,
# `client_secret_expires_at`, `signature_algorithm`, `PasswordLastUsed`, `ExpiredSignatureError`
# (an exception's name before its message). A secret's value never hides under them, only facts
# about it.
_ABOUT_A_SECRET = frozenset(
    "ttl lifetime expiry expires expire expired expiration timeout interval rotation age count counts limit"
    " limits len length size max min budget rate ratio file files path paths dir url uri urls endpoint name"
    " names type kind header headers field format alg algorithm algorithms method version versions at in ref"
    " arn policy stdin source provider helper store issuer audience scope scopes enabled disabled required"
    " valid invalid env var prefix mode used created updated changed rotated modified issued error errors"
    " exception".split()
)
# Units after the describing word: `token_ttl_s`, `secret_rotation_days`.
_UNITS = frozenset("s ms us ns sec secs second seconds m mins minute minutes h hr hrs hour hours d day days".split())
# A first word that makes the key a switch about secrets: `--no-password`, `use_token_auth`.
_SWITCHES = frozenset("no skip ask prompt require requires allow enable disable use show hide has is with".split())
# The shell's working directories, in every `env` output.
_SHELL_VARIABLES = frozenset({"PWD", "OLDPWD"})
# `max_tokens: 1024`, `prompt_tokens`, `tokens_per_second`: a number under a plural is a count.
_PLURALS = ("tokens", "secrets", "passwords", "credentials")
# Keys that name a secret only where they cannot be a log prefix: docker's config.json
# `"auth": "<base64 user:password>"` is a dict key, while `auth: token issued` in a log is not.
STRUCTURE_ONLY_KEYS = frozenset({"auth"})
AUTHORIZATION_KEYS = frozenset({"authorization", "proxy-authorization"})

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def words(key: str) -> list[str]:
    return [word.lower() for word in _WORDS.findall(key)]


def mentions_secret(key: str) -> bool:
    """Whether a key holds a secret word at all, describing one (`token_ttl`) or not."""
    return _SECRET_WORD_RE.search(key) is not None


@functools.lru_cache(maxsize=4096)
def secret_key(key: str) -> bool:
    """Whether a key's name says its value is a secret."""
    name = key.strip("-$\"'\\")
    if name.upper() in _SHELL_VARIABLES:
        return False
    if not _SECRET_WORD_RE.search(_NOT_SECRET_WORDS.sub(" ", name)):
        return False
    parts = words(name)
    while len(parts) > 1 and parts[-1] in _UNITS:
        parts.pop()
    return not parts or not (parts[-1] in _ABOUT_A_SECRET or parts[0] in _SWITCHES)


def counts(key: str, value: str) -> bool:
    """`max_tokens: 1024`: a number under a plural key counts things, it is no secret."""
    return _NUMBER.fullmatch(value.strip()) is not None and any(w.endswith(_PLURALS) for w in words(key))


def pair_kind(key: str) -> Kind:
    """`aws` for AWS's own key names, else `secret-value`."""
    return Kind.aws if re.search(r"(?i)aws|secret_?access_?key", key) else Kind.secret_value


# Keys that hold a vendor's key in one product and a setting in another: PagerDuty's `routing_key`
# and `service_key` (Alertmanager's pagerduty_configs) are RabbitMQ's `routing_key: orders.created`
# too, and Algolia's `search_key` is a search setting elsewhere. Their value is a secret only when
# it has a key's shape (tools/redact/vendors.py `key_shaped`).
_SHAPED_KEY = re.compile(r"(?i)(?:routing|service|search)[_.-]?key(?![a-z])")


@functools.lru_cache(maxsize=4096)
def shaped_key(key: str) -> bool:
    """Whether a key names a vendor's key only if its value has a key's shape."""
    return _SHAPED_KEY.search(key) is not None and not secret_key(key)


# Vendors whose credentials gitleaks recognises only by the vendor's name in the key (its
# keyword rules: datadog-access-token, sentry-access-token, cloudflare-api-key, heroku-api-key,
# mailgun-*, twilio, telegram-bot-api-token, ...), lower case.
VENDOR_WORDS = (
    "datadog", "sentry", "cloudflare", "heroku", "mailgun", "mailchimp", "twilio", "telegram", "discord",
    "confluent", "cohere", "netlify", "newrelic", "new_relic", "new-relic", "okta", "snyk", "sumologic",
    "jfrog", "artifactory", "squarespace", "messagebird", "yandex", "atlassian", "jira", "confluence",
    "pagerduty", "opsgenie", "bugsnag", "rollbar", "honeycomb", "launchdarkly", "algolia", "sendgrid",
    "circleci", "codecov", "buildkite", "fastly", "dropbox", "zendesk", "hubspot", "airtable", "segment",
)  # fmt: skip
_VENDOR_SETTINGS = frozenset(
    "url uri host site region env environment name org organization project team version".split()
)


@functools.lru_cache(maxsize=4096)
def vendor_key(key: str) -> bool:
    """Whether a key names a vendor's credential by the vendor alone (`DATADOG_APP`, `sentry`),
    rather than one of its settings (`sentry_url`, `datadog_site`)."""
    lowered = key.lower()
    if not any(word in lowered for word in VENDOR_WORDS):
        return False
    parts = words(key)
    return not parts or parts[-1] not in _VENDOR_SETTINGS | _ABOUT_A_SECRET
