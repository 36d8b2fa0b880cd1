"""Secret redaction for any text that leaves a tool: to the model, to a chat, to a log.

A redaction is marked `[REDACTED:kind]` so readers know something was there. Three layers:

- token shapes: a Slack, GitHub or AWS key is recognisable wherever it appears (shapes derived
  from gitleaks' default rules, MIT), PEM private keys across lines, URL userinfo and
  `Authorization` headers;
- `key = value` pairs whose key names a secret, in any config format (INI, .env, YAML, JSON,
  properties, TOML, XML elements, CLI flags, Kubernetes/ECS `name`+`value` pairs);
- for parsed data (`redact`, `redact_structure`): the value under any dict key that names a
  secret, whatever its shape, numbers included.

What is deliberately left readable (one rule for text and structures alike):

- values that cannot authenticate: references and masks (`${DB_PASSWORD}`, `$DB_PASSWORD`,
  `{{ .Values.token }}`, `<your key here>`, `********`, a file path, an ARN), booleans and null;
- keys that describe a secret rather than hold it (`token_ttl`, `password_min_length`,
  `secret_name`, `password_file`, `token_url`, `token_type`...), see `_ABOUT_A_SECRET`;
- counts of model tokens: a number under a plural key (`max_tokens: 1024`, `prompt_tokens`).

Vendors' documented example keys (`AKIAIOSFODNN7EXAMPLE`, jwt.io's sample token) are redacted
like real ones: an allowlist of famous examples would be a list of values that leak when someone
pastes them into a real config, and a shape cannot tell an example from a key.

Every pattern runs in linear time on any input: quantifiers that could overlap are possessive or
bounded, and decisions that would need backtracking are made in Python on the match instead.
"""

from __future__ import annotations

import functools
import re
from typing import Any


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# ================================================================================ token shapes


class Shape:
    """A token recognisable by its shape. `needles` are literals any match contains: checking them
    first skips the pattern for nearly every text, which keeps redaction of large outputs cheap."""

    def __init__(self, kind: str, needles: tuple[str, ...], pattern: str, *, random: bool = False) -> None:
        self.kind = kind
        self.needles = needles
        self.pattern = re.compile(pattern)
        # A vendor prefix alone is not enough for `sk-`: lowercase names such as
        # `sk-learn-model-7d9f8` are common in k8s; real keys are random base62, so they hold a
        # digit and an upper-case letter. Checked on the match, not by look-aheads, so a long run
        # costs one scan.
        self.random = random

    def present(self, text: str) -> bool:
        return any(needle in text for needle in self.needles)

    def sub(self, text: str) -> str:
        if not self.present(text):
            return text
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        token = match.group(0)
        if self.random and not (any(c.isdigit() for c in token) and any(c.isupper() for c in token)):
            return token
        return _marker(self.kind)


SHAPES: list[Shape] = [
    # Only the path is the secret; the host tells the reader what it was.
    Shape(
        "slack-webhook",
        ("hooks.slack.com/",),
        r"(?<=hooks\.slack\.com/)(?:services|workflows|triggers)/[0-9A-Za-z_/+-]{20,}",
    ),
    Shape("slack", ("xox", "xapp-"), r"\bxox[abcdeoprs](?:\.xox[bp])?-[0-9A-Za-z-]{10,}|\bxapp-\d-[0-9A-Za-z-]{10,}"),
    Shape("anthropic", ("sk-ant-",), r"\bsk-ant-[0-9A-Za-z_-]{20,}+", random=True),
    Shape("openai", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[0-9A-Za-z_-]{20,}+", random=True),
    Shape(
        "stripe",
        ("k_live_", "k_test_", "whsec_"),
        r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[0-9A-Za-z+/=]{24,}",
    ),
    Shape(
        "github",
        ("ghp_", "gho_", "ghs_", "ghr_", "ghu_", "github_pat_"),
        r"\bgh[opsru]_[0-9A-Za-z]{36,}|\bgithub_pat_[0-9A-Za-z_]{22,}",
    ),
    Shape(
        "gitlab",
        ("gl", "GR1348941"),
        r"\bgl(?:pat|ptt|dt|rt|cbt|ft|imt|oas|soat|agent)-[0-9A-Za-z_.-]{20,}|\bGR1348941[0-9A-Za-z_-]{20,}",
    ),
    # API keys, OAuth client secrets, OAuth access tokens, OAuth refresh tokens.
    Shape(
        "gcp",
        ("AIza", "GOCSPX-", "ya29.", "1//0"),
        r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])|\bGOCSPX-[0-9A-Za-z_-]{24,}"
        r"|\bya29\.[0-9A-Za-z_.-]{20,}|(?<![\w/])1//0[0-9A-Za-z_-]{30,}",
    ),
    Shape(
        "aws",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    Shape("jwt", ("eyJ",), r"\beyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]*"),
]

# ================================================================================ PEM private keys

_PEM_LABEL = r"[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = re.compile(rf"-----END{_PEM_LABEL}")
# A body is lines of base64 or of RFC 1421 / OpenPGP headers (`Proc-Type: 4,ENCRYPTED`,
# `Version: GnuPG`), ended by real newlines or by `\n` escapes (a key inside a JSON string, as in
# a GCP service-account file). Each repetition eats a line end, and the loop is possessive.
_PEM_BLOCK = re.compile(
    rf"-----BEGIN{_PEM_LABEL}"
    r"(?P<body>(?:[ \t]*(?:[A-Za-z][\w-]{0,30}:[^\r\n\\]*|[A-Za-z0-9+/=]+)?[ \t]*(?:\r?\n|(?:\\r)?\\n))*+"
    r"[A-Za-z0-9+/=]*)"
    rf"(?:[ \t]*(?P<end>-----END{_PEM_LABEL}))?"
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")
_BODY_LINE = re.compile(r"[ \t]*[A-Za-z0-9+/=\\]*[ \t]*")
# Matched on the reversed text: the run of body characters that ends where an END line begins.
_BODY_RUN_REVERSED = re.compile(r"[A-Za-z0-9+/=\\ \t\r\n]*")


def _pem_block(match: re.Match[str]) -> str:
    # A key cut before its END line (an output cap, `head`) is still a key; a BEGIN line with no
    # key material after it is someone writing about keys.
    if match.group("end") or _BASE64_RUN.search(match.group("body")):
        return _marker("pem")
    return match.group(0)


def _redact_pem_tails(text: str) -> str:
    """The end of a key whose BEGIN line was cut off (`tail -n 20 key.pem`, the last lines of a log)."""
    reversed_text = text[::-1]
    pieces: list[str] = []
    done = 0
    for end in _PEM_END.finditer(text):
        run = _BODY_RUN_REVERSED.match(reversed_text, len(text) - end.start())
        run_length = run.end() - run.start() if run else 0
        # The run may have taken words of the lines before the key: keep only the trailing lines
        # that are wholly key material.
        run_start = max(done, end.start() - run_length)
        lines = text[run_start : end.start()].split("\n")
        first = len(lines)
        while first > 0 and _BODY_LINE.fullmatch(lines[first - 1]):
            first -= 1
        # Key lines are whole lines; a run that began mid-line took the end of another line
        # (`tail -n 3 checkout.key`), unless the key is all on one line (JSON-escaped).
        if first == 0 and len(lines) > 1 and run_start > 0 and text[run_start - 1] != "\n":
            first = 1
        start = end.start() - len("\n".join(lines[first:]))
        while text[start] in "\r\n":  # the line break before the key belongs to the line before
            start += 1
        if not _BASE64_RUN.search(text, start, end.start()):
            continue
        pieces += [text[done:start], _marker("pem")]
        done = end.end()
    return "".join(pieces) + text[done:] if pieces else text


def _redact_pem(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    return _redact_pem_tails(_PEM_BLOCK.sub(_pem_block, text))


# ================================================================================ URL userinfo

# Greedy up to the authority's end, then back to its last `@`: passwords are often not
# percent-encoded (`postgres://app:p@ss!@db`). Quotes end it so a JSON line is not swallowed.
_URL_USERINFO = re.compile(r"(?<=://)(?P<user>[^/\s:@\"'\\]*):(?P<password>[^/\s\"'\\]*)@")


def _url_userinfo(match: re.Match[str]) -> str:
    password = match.group("password")
    if _harmless(password):
        return match.group(0)
    return f"{match.group('user')}:{_marker('url-credentials')}@"


# ================================================================================ Authorization

_AUTH_HEADER = re.compile(r"(?i)\bauthorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<value>[^\r\n\"'\\]*)")
_SCHEME = re.compile(
    r"(?i)(?P<scheme>bearer|basic|token|digest|negotiate|ntlm|api-?key|sso-key|splunk|dsn|oauth|mac|hoba"
    r"|aws4-hmac-sha256|hmac-sha256)[ \t]+(?P<rest>.*)",
    re.S,
)
# Schemes whose credential is a list of parameters, not one token. Their quoted parameters
# (`Digest username="bob", response="6629fa..."`) would end the header pattern's value, so they
# have a pattern of their own that walks `name=value` and `name="value"` pairs.
_PARAMETER_SCHEMES = frozenset({"digest", "oauth", "mac", "hoba", "aws4-hmac-sha256", "hmac-sha256"})
_AUTH_PARAMETERS = re.compile(
    r"(?i)\bauthorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    rf"(?:{'|'.join(sorted(_PARAMETER_SCHEMES))})[ \t]+"
    r"(?P<parameters>[\w-]+=(?:\"[^\"\r\n]*\"|[^\s,\"']*)(?:[ \t]*,[ \t]*[\w-]+=(?:\"[^\"\r\n]*\"|[^\s,\"']*))*+)"
)
_FIRST_WORD = re.compile(r"\s*(?P<word>\S+)(?P<tail>.*)", re.S)
# `Bearer <token>` outside a header (a log line quoting a request). A digit is required so that
# prose ("bearer of bad news") is left alone.
_BEARER = re.compile(r"(?<![\w-])(?:[Bb]earer|BEARER)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}=*)")


def _auth_value(value: str) -> str:
    """A header value with its credential hidden and its scheme kept (`Basic [REDACTED:...]`)."""
    scheme = _SCHEME.match(value)
    if scheme is not None:
        head, rest = value[: scheme.start("rest")], scheme.group("rest")
        if scheme.group("scheme").lower() in _PARAMETER_SCHEMES:
            if _MARKER.match(rest):  # redacted by `_AUTH_PARAMETERS`; what follows is not the header's
                return value
            credential, tail = rest, ""
        else:
            first = _FIRST_WORD.match(rest)
            if first is None:
                return value
            credential, tail = first.group("word"), first.group("tail")
        if _harmless(credential):
            return value
        return f"{head}{_marker('authorization')}{tail}"
    # No scheme: a raw key (`Authorization: lin_api_...`) or prose (`Authorization: required`).
    first = _FIRST_WORD.match(value)
    if first is None:
        return value
    word = first.group("word")
    looks_random = (len(word) >= 8 and any(c.isdigit() for c in word)) or len(word) >= 24
    if not looks_random or _harmless(word):
        return value
    return value[: first.start("word")] + _marker("authorization") + first.group("tail")


def _auth_parameters(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("parameters") - match.start()] + _marker("authorization")


def _auth_header(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("value") - match.start()] + _auth_value(match.group("value"))


def _bearer(match: re.Match[str]) -> str:
    token = match.group("token")
    if not any(c.isdigit() for c in token):
        return match.group(0)
    return match.group(0)[: match.start("token") - match.start()] + _marker("authorization")


# ================================================================================ secret key names

# A glued prefix is allowed (PGPASSWORD, AUTHTOKEN, dbpassword); `pass` and `pwd` only as whole
# words (DB_PASS, dbPass, smtp_pwd), since as substrings they are in bypass, compass, OLDPWD.
_SECRET_WORD = (
    r"(?:passw(?:or)?d|passphrase|secret|token|credential|creds"
    r"|(?:api|access|private|account|signing|encryption|master|client)[_.-]?key"
    r"|(?<![a-z])(?:pass|pwd)(?![a-z])|(?-i:Pass|Pwd)(?![a-z]))"
)
_SECRET_WORD_RE = re.compile(_SECRET_WORD, re.I)
# Words that contain a secret word and are not about secrets.
_NOT_SECRET_WORDS = re.compile(r"(?i)tokeni[sz][a-z]*|secretar[a-z]*|passwordless|pass[_.-]?thr(?:ough|u)")
# A key whose last word is one of these describes a secret rather than holding it: `token_ttl`,
# `password_min_length`, `secret_name`, `password_file`, `token_url`, `token_type: Bearer`,
# `client_secret_expires_at`. A secret's value never hides under them, only facts about it.
_ABOUT_A_SECRET = frozenset(
    "ttl lifetime expiry expires expire expired expiration timeout interval rotation age count counts limit"
    " limits len length size max min budget rate ratio file files path paths dir url uri urls endpoint name"
    " names type kind header field format alg algorithm at in ref arn version policy stdin source provider"
    " helper store issuer audience scope scopes enabled disabled required env var prefix mode".split()
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
_STRUCTURE_ONLY_KEYS = frozenset({"auth"})
_AUTHORIZATION_KEYS = frozenset({"authorization", "proxy-authorization"})

_MARKER = re.compile(r"\[REDACTED:[\w-]+\]")
_REDACTED = re.compile(r"(?:\[REDACTED:[\w-]+\]|\\[nrt]|\s)+")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")

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
)


def _words(key: str) -> list[str]:
    return [word.lower() for word in _WORDS.findall(key)]


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """Whether a key's name says its value is a secret."""
    name = key.strip("-$\"'\\")
    if name.upper() in _SHELL_VARIABLES:
        return False
    if not _SECRET_WORD_RE.search(_NOT_SECRET_WORDS.sub(" ", name)):
        return False
    words = _words(name)
    while len(words) > 1 and words[-1] in _UNITS:
        words.pop()
    return not words or not (words[-1] in _ABOUT_A_SECRET or words[0] in _SWITCHES)


def _harmless(value: str) -> bool:
    # Only a value that is wholly markers (and line-end escapes: `"[REDACTED:pem]\\n"`) was dealt
    # with already; `Credential=[REDACTED:aws]/..., Signature=...` still holds a secret.
    value = value.strip()
    return not value or _REDACTED.fullmatch(value) is not None or _HARMLESS_VALUE.fullmatch(value) is not None


def _keeps(key: str, value: str) -> bool:
    """Whether a value under a secret-looking key is no secret after all."""
    if _harmless(value):
        return True
    return _NUMBER.fullmatch(value.strip()) is not None and any(w.endswith(_PLURALS) for w in _words(key))


def _pair_kind(key: str) -> str:
    return "aws" if re.search(r"(?i)aws|secret_?access_?key", key) else "secret-value"


# ================================================================================ key = value

# What follows a separator: a quoted string (JSON with escapes, an escaped quote inside another
# string, single quotes), a reference that may contain spaces, or a bare word up to whitespace or
# the punctuation that ends a value in logs, flow YAML and connection strings.
_VALUE = (
    r"(?:\\[\"'](?P<escaped>[^\"'\\\r\n]*)"
    r"|\"(?P<double>(?:[^\"\\\r\n]|\\.)*)"
    r"|'(?P<single>[^'\r\n]*)"
    r"|(?P<reference><[^<>\r\n]{1,80}>|\$?\{\{[^}\r\n]{1,200}\}\}|\$\{[^}\r\n]{1,200}\})"
    r"|(?P<bare>(?![\[{])[^\s\"',;}]+))"
)
_VALUE_GROUPS = ("escaped", "double", "single", "reference", "bare")
_QUOTE = r"\\?[\"']?"
_SEPARATOR = rf"{_QUOTE}[ \t]*(?::=|=>|[:=])[ \t]*"


class Pairs:
    """A `key = value` form. `needles` (lower case) are literals every match contains."""

    def __init__(self, needles: tuple[str, ...], pattern: str) -> None:
        self.needles = needles
        self.pattern = re.compile(pattern, re.I)

    def sub(self, text: str, lowered: str) -> str:
        if not any(needle in lowered for needle in self.needles):
            return text
        return self.pattern.sub(_pair, text)


# Every secret word contains one of these.
_SECRET_NEEDLES = ("pass", "pwd", "secret", "token", "cred", "key")

PAIRS: list[Pairs] = [
    # Kubernetes env and ECS task definitions: the secret's name is the value of `name`.
    Pairs(
        ("value",),
        rf"\b(?:name|key){_SEPARATOR}{_QUOTE}(?P<key>[\w.-]++){_QUOTE}[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?"
        rf"{_QUOTE}value{_SEPARATOR}{_VALUE}",
    ),
    # `password = x`, `"api_key": "x"`, `PGPASSWORD=x`, `--token=x`, `'secret' => 'x'`. The key is
    # the whole run of key characters (possessive, so a long run is scanned once), and the
    # look-ahead only admits runs that contain a secret word.
    Pairs(_SECRET_NEEDLES, rf"(?<![\w.-])(?=[\w.-]*?{_SECRET_WORD})(?P<key>[\w.-]++){_SEPARATOR}{_VALUE}"),
    # `--password hunter2`: a long option and its separate argument (never one that is an option).
    # `--` comes first so the scan can jump between literals; the look-behind after it says the
    # option starts a word.
    Pairs(("--",), rf"--(?<![\w-]--)(?=[\w.-]*?{_SECRET_WORD})(?P<key>[\w.-]++)[ \t]++(?!-){_VALUE}"),
    # `<password>hunter2</password>`
    Pairs(("</",), rf"<(?=[\w.:-]*?{_SECRET_WORD})(?P<key>[\w.:-]++)>(?P<bare>[^<\r\n]++)(?=</)"),
]


def _pair(match: re.Match[str]) -> str:
    found = match.groupdict()
    group = next((g for g in _VALUE_GROUPS if found.get(g) is not None), None)
    if group is None:
        return match.group(0)
    key, value = match.group("key"), match.group(group)
    if not _secret_key(key) or _keeps(key, value):
        return match.group(0)
    # `kubectl describe secret` prints each key's size (`password:  16 bytes`), not its value.
    if group == "bare" and value.isdigit() and match.string.startswith(" bytes", match.end()):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start()] + _marker(_pair_kind(key))


# ================================================================================ entry points


def redact_text(text: str) -> str:
    text = _redact_pem(text)
    for shape in SHAPES:
        text = shape.sub(text)
    if "://" in text:
        text = _URL_USERINFO.sub(_url_userinfo, text)
    # Later steps only replace text by markers, which hold none of the needles looked for after
    # them, so one lowered copy serves every pre-check.
    lowered = text.lower()
    if "authorization" in lowered:
        text = _AUTH_PARAMETERS.sub(_auth_parameters, text)
        text = _AUTH_HEADER.sub(_auth_header, text)
    if "bearer" in lowered:
        text = _BEARER.sub(_bearer, text)
    for pairs in PAIRS:
        text = pairs.sub(text, lowered)
    return text


def redact(value: Any) -> Any:
    """Redact every string inside `value` (nested dicts and lists included), and the value under
    every dict key that names a secret (`redact_structure`)."""
    return _walk(value, texts=True)


def redact_structure(value: Any) -> Any:
    """Redact the value under every dict key that names a secret, at any depth, whatever the
    value's shape (`{"password": 1234}`); strings elsewhere are left as they are.

    Under a secret key a scalar becomes a marker, a list has each item judged the same way, and a
    dict is walked (its own keys decide: `secretKeyRef: {name: db, key: password}` names a secret,
    it does not hold one). Booleans and null stay: they cannot authenticate."""
    return _walk(value, texts=False)


def _walk(value: Any, texts: bool) -> Any:
    if isinstance(value, str):
        return redact_text(value) if texts else value
    if isinstance(value, dict):
        return _walk_dict(value, texts)
    if isinstance(value, list | tuple):
        return [_walk(item, texts) for item in value]
    return value


def _walk_dict(mapping: dict[Any, Any], texts: bool) -> dict[Any, Any]:
    named = _pair_name(mapping)
    out: dict[Any, Any] = {}
    for key, item in mapping.items():
        key_name = named if named is not None and key in ("value", "Value") else key
        out[key] = _under_key(key_name, item, texts) if isinstance(key_name, str) else _walk(item, texts)
    return out


def _pair_name(mapping: dict[Any, Any]) -> str | None:
    """`{"name": "DB_PASSWORD", "value": "..."}` (Kubernetes env, ECS): the name `value` is under."""
    if "value" not in mapping and "Value" not in mapping:
        return None
    for field in ("name", "Name", "key", "Key"):
        name = mapping.get(field)
        if isinstance(name, str):
            return name
    return None


def _under_key(key: str, value: Any, texts: bool) -> Any:
    if isinstance(value, str) and key.lower() in _AUTHORIZATION_KEYS:
        return redact_text(_auth_value(value)) if texts else _auth_value(value)
    secret_key = _secret_key(key) or key.lower() in _STRUCTURE_ONLY_KEYS
    if not secret_key or isinstance(value, bool) or value is None:
        return _walk(value, texts)
    if isinstance(value, list | tuple):
        return [_under_key(key, item, texts) for item in value]
    if isinstance(value, str | int | float):
        text = str(value)
        if _keeps(key, text):
            return _walk(value, texts)
        return _marker(_value_kind(key, text))
    return _walk(value, texts)


def _value_kind(key: str, value: str) -> str:
    if "PRIVATE KEY-----" in value:
        return "pem"
    for shape in SHAPES:
        if shape.present(value) and shape.sub(value) != value:
            return shape.kind
    return _pair_kind(key)
