"""Secrets with no shape of their own, known by what stands beside them on the line:

- an AWS secret access key (40 characters of base64) after its access key id or the word `aws`,
  as `aws configure list`, credential CSV exports and careless log lines print them;
- Docker's `auth` value and npm's `_auth`, base64 of `user:password`, wherever the text holds
  it (a config.json quoted in a log line, an .npmrc, a file too large to parse);
- a random string right after a word that names a secret, with no `=` between them
  (`rotated token 9fK2...`, `login with password Xq7!v...`);
- the password of curl's `-u user:password` (and `--user`, `--proxy-user`), as shell history,
  runbooks and CI logs show it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from .find import sub_at
from .markers import MARKER, Kind, harmless, marker

# The key id shape (tools/redact/shapes.py) leaves a marker this rule starts from.
AWS_NEEDLES = ("aws", "akia", "asia", "abia", "acca", "a3t")
DOCKER_NEEDLES = ("auth",)

# After a key id (already a marker: shapes run first) or the word `aws`, within the line. A run
# that goes on in base64url (`-`, `_`) is no key: a wheel's RECORD line
# (`aws_attributes.py,sha256=<43 characters>`) holds 40 base64 characters before its first `-`.
_THEN_AWS_SECRET = r"[^\r\n]{0,80}?(?<![A-Za-z0-9+/_-])(?P<secret>[A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=_-])"
_AWS_SECRETS = (
    ("[redacted:aws]", re.compile(r"\[REDACTED:aws\]" + _THEN_AWS_SECRET)),
    ("aws", re.compile(r"(?i)(?<!\w)aws(?![a-z])" + _THEN_AWS_SECRET)),
)
# `_auth=` too: npm's legacy credential in .npmrc, base64 of `user:password` like Docker's.
_DOCKER_AUTH = re.compile(
    r"(?i)(?<![A-Za-z0-9-])auth\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<value>[A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9+/=])"
)
# A word naming a secret, optional joining words, then the candidate, judged in Python. One
# pattern per leading word, so each is tried only where its word is.
_JOIN = (
    r"(?:[ \t]+(?:is|was|of|for|to|set[ \t]+to|changed[ \t]+to|now))?[ \t]*:?[ \t]+[\"'`]?"
    r"(?P<value>[^\s\"'`,;()\[\]<>]{12,200})"
)
_WORDS = {
    "pass": r"pass(?:words?|wd|phrases?)",
    "secret": r"secrets?(?:[ _-]?keys?)?",
    "token": r"tokens?",
    "api": r"api[ _-]?keys?",
    "access": r"access[ _-]?keys?",
    "private": r"private[ _-]?keys?",
    "credential": r"credentials?",
}
_AFTER_WORDS = tuple((needle, re.compile(rf"(?i)(?<![\w-]){word}{_JOIN}")) for needle, word in _WORDS.items())
# `api`, `access` and `private` alone are everywhere (`checkout-api`, `access log`): the rule is
# woken by the two words together in any spelling.
WORD_NEEDLES = (
    "pass", "secret", "token", "credential",
    *(f"{word}{joint}key" for word in ("api", "access", "private") for joint in ("", " ", "_", "-")),
)  # fmt: skip
# `bad password user=u-04211`: what follows the word is the next field, not a value of it.
_A_PAIR = re.compile(r"[\w.-]+[=:]")
_ENTROPY_BITS = 3.0  # bits a character: random base64 is near 6, English words near 2.5 to 3


USER_FLAG_NEEDLES = ("-u",)  # `--user` and `--proxy-user` hold it too
_USER_AND_PASSWORD = r"(?:[ \t]+|=)[\"']?(?P<user>[^\s:\"']{1,128}):(?P<password>[^\s\"']{1,256})"
_USER_FLAGS = (
    ("-u", re.compile(rf"(?<![\w-])-u{_USER_AND_PASSWORD}")),
    ("--", re.compile(rf"(?<![\w-])--(?:user|proxy-user){_USER_AND_PASSWORD}")),
)


def redact_user_flags(text: str) -> str:
    for needle, pattern in _USER_FLAGS:
        text = sub_at(needle, pattern, _user_flag, text)
    return text


def _user_flag(match: re.Match[str]) -> str:
    if harmless(match.group("password")):
        return match.group(0)
    return match.group(0)[: match.start("password") - match.start()] + marker(Kind.url_credentials)


def redact_aws_secrets(text: str) -> str:
    for needle, pattern in _AWS_SECRETS:
        text = sub_at(needle, pattern, _aws_secret, text)
    return text


def redact_docker_auth(text: str) -> str:
    return sub_at("auth", _DOCKER_AUTH, _docker_auth, text)


def redact_after_words(text: str) -> str:
    for needle, pattern in _AFTER_WORDS:
        text = sub_at(needle, pattern, _after_word, text)
    return text


def _aws_secret(match: re.Match[str]) -> str:
    secret = match.group("secret")
    # Mixed case: a git SHA or a hex digest next to `aws` is not a key.
    if not (any(c.isupper() for c in secret) and any(c.islower() for c in secret)):
        return match.group(0)
    return match.group(0)[: match.start("secret") - match.start()] + marker(Kind.aws)


def _docker_auth(match: re.Match[str]) -> str:
    if not _user_password(match.group("value")):
        return match.group(0)
    return match.group(0)[: match.start("value") - match.start()] + marker(Kind.docker_auth)


def _user_password(value: str) -> bool:
    """Whether base64 `value` decodes to the `user:password` text Docker stores."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password and decoded.isprintable())


def _after_word(match: re.Match[str]) -> str:
    value = match.group("value").rstrip(".:!?")
    if harmless(value) or MARKER.search(value) or _A_PAIR.match(value) or not _random(value):
        return match.group(0)
    start = match.start("value") - match.start()
    return match.group(0)[:start] + marker(Kind.secret_value) + match.group(0)[start + len(value) :]


def _random(value: str) -> bool:
    """Letters and digits mixed, and as unpredictable as generated text (not a word, a path or a URL)."""
    if "://" in value or value.count("/") > 1:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_letter = any(c.isalpha() for c in value)
    return has_digit and has_letter and _entropy(value) >= _ENTROPY_BITS


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())
