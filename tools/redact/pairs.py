"""`key = value` pairs whose key names a secret, in every config format and in logs: INI, .env,
YAML, JSON (escaped inside another string too), properties, TOML, connection strings, CLI flags
(`--token=x`, `--password x`), XML elements, Ruby/PHP hashes, query strings (`X-Amz-Signature=`).

The key is the whole run of key characters around a secret word. Runs are found from the
occurrences of the secret words' needles in the lower-cased text (one fast scan each), not by a
pattern tried at every position, so a text full of `token` costs a lookup per occurrence.
"""

from __future__ import annotations

import re

import ahocorasick
import regex

from ..span import EndsByStart
from .keys import (
    SECRET_NEEDLES,
    SECRET_WORD,
    VENDOR_WORDS,
    counts,
    mentions_secret,
    pair_kind,
    secret_key,
    shaped_key,
    vendor_key,
)
from .markers import Kind, harmless, marker
from .vendors import key_shaped, vendor_credential

NEEDLES = (*SECRET_NEEDLES, *VENDOR_WORDS, "--", "</")

# What follows a separator: a quoted string (JSON with escapes, an escaped quote inside another
# string, single quotes), a reference that may contain spaces, or a bare word up to whitespace or
# the punctuation that ends a value in logs, flow YAML and connection strings.
VALUE = (
    r"(?:\\[\"'](?P<escaped>[^\"'\\\r\n]*)"
    r"|\"(?P<double>(?:[^\"\\\r\n]|\\.)*)"
    r"|'(?P<single>[^'\r\n]*)"
    r"|(?P<reference><[^<>\r\n]{1,80}>|\$?\{\{[^}\r\n]{1,200}\}\}|\$\{[^}\r\n]{1,200}\}"
    r"|\((?:sensitive value|known after apply)\))"
    r"|(?P<bare>(?![\[{])[^\s\"',;}]+))"
)
_VALUE_GROUPS = ("escaped", "double", "single", "reference", "bare")
QUOTE = r"\\?[\"']?"
SEPARATOR = rf"{QUOTE}[ \t]*(?::=|=>|[:=])[ \t]*"
_AFTER_KEY = re.compile(rf"{SEPARATOR}{VALUE}")
# The same pairs as one pattern, for the rare text whose lower-cased form has another length.
_KEYED = re.compile(rf"(?i)(?<![\w.-])(?=[\w.-]*?{SECRET_WORD})(?P<key>[\w.-]++){SEPARATOR}{VALUE}")
# `--password hunter2`: a long option and its separate argument (never one that is an option).
# `--` comes first so the scan can jump between literals; the look-behind after it says the
# option starts a word.
_FLAG = re.compile(rf"(?i)--(?<![\w-]--)(?=[\w.-]*?{SECRET_WORD})(?P<key>[\w.-]++)[ \t]++(?!-){VALUE}")
# `<password>hunter2</password>`
_ELEMENT = re.compile(rf"(?i)<(?=[\w.:-]*?{SECRET_WORD})(?P<key>[\w.:-]++)>(?P<bare>[^<\r\n]++)(?=</)")


def redact_pairs(text: str) -> str:
    lowered = text.lower()
    if any(needle in lowered for needle in SECRET_NEEDLES):
        if "--" in text:
            text = _FLAG.sub(_pair, text)
        if "</" in text:
            text = _ELEMENT.sub(_pair, text)
    return _keyed(text)


# Keys that are something else where they stand: a source file and line in a stack frame
# (`TokenRefresher.java:42`), an ARN's service (`arn:aws:secretsmanager:eu-west-1:...`), a
# Terraform resource address before its progress (`random_password.db: Creation complete`).
_SOURCE_FILE = re.compile(
    r"(?i)[\w.-]+\.(?:java|kt|scala|groovy|py|go|rb|js|mjs|cjs|ts|tsx|jsx|cs|c|cc|cpp|h|hpp|rs|php|swift|ex|exs|erl)"
)
_ARN = re.compile(r"arn:aws[\w-]*:")
_TOKEN_BEFORE = regex.compile(r"[^\s\"'`]{0,256}", regex.REVERSE)  # matched backwards from a key
_TERRAFORM_ADDRESS = re.compile(r"(?:module\.[\w-]+\.)*[a-z0-9]+_[a-z0-9_]+\.[\w-]+")
_TERRAFORM_PROGRESS = re.compile(
    r"(?:Creating|Creation|Reading|Read|Refreshing|Modifying|Modifications|Destroying|Destruction|Still)\b"
)


def _elsewhere(text: str, start: int, key: str, value: str) -> bool:
    """Whether a key-shaped run is a source file, an ARN's part or a Terraform address (above)."""
    # Cheap tests first: each shape needs a dot in the key, or a colon right before it.
    dotted = "." in key
    if dotted and _SOURCE_FILE.fullmatch(key) and value.rstrip(")]").isdigit():
        return True
    if start and text[start - 1] == ":" and (begun := _TOKEN_BEFORE.match(text, 0, start)) is not None:
        if _ARN.match(text, begun.start()):
            return True
    return dotted and _TERRAFORM_ADDRESS.fullmatch(key) is not None and _TERRAFORM_PROGRESS.match(value) is not None


def _keyed(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # lower() lengthened a character (İ): offsets would not line up
        return _KEYED.sub(_pair, text)
    pieces: list[str] = []
    done = 0
    for start, end in _key_runs(text, lowered).items():
        if start < done:
            continue
        match = _AFTER_KEY.match(text, end)
        if match is None:
            continue
        key, group = text[start:end], value_group(match)
        if group is None or _elsewhere(text, start, key, match.group(group)):
            continue
        kind = _value_kind(key, match, group)
        if kind is not None:
            pieces += [text[done : match.start(group)], marker(kind)]
            done = match.end()
        elif mentions_secret(key):
            # A value kept (`secret: arn:aws:secretsmanager:...`) is one value: keys inside it are not looked at.
            pieces.append(text[done : match.end()])
            done = match.end()
    return "".join(pieces) + text[done:] if pieces else text


def _automaton(needles: tuple[str, ...]) -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for needle in needles:
        automaton.add_word(needle, needle)
    automaton.make_automaton()
    return automaton


# The secret words' and vendors' needles, found in one pass (see tools/redact/text.py).
_KEY_NEEDLES = _automaton((*SECRET_NEEDLES, *VENDOR_WORDS))
_KEY_TAIL = re.compile(r"[\w.-]*")
_KEY_HEAD = regex.compile(r"[\w.-]*", regex.REVERSE)  # matched backwards from a needle


def _key_runs(text: str, lowered: str) -> EndsByStart:
    """Every run of key characters holding a needle, in order, each once."""
    runs: EndsByStart = {}
    end = -1  # of the run found last
    for last, needle in _KEY_NEEDLES.iter(lowered):
        at = last - len(needle) + 1
        if at < end:
            continue  # in the run found last (`secret_token` holds two needles)
        head = _KEY_HEAD.match(text, 0, at)
        tail = _KEY_TAIL.match(text, at)
        start = head.start() if head else at
        if start >= end:
            end = tail.end() if tail else last + 1
            runs[start] = end
    return runs


def value_group(match: re.Match[str]) -> str | None:
    """The name of the value's group that matched: the value's alternatives are the pattern's
    last groups, so the last group to close is the one."""
    return match.lastgroup if match.lastgroup in _VALUE_GROUPS else None


def _value_kind(key: str, match: re.Match[str], group: str) -> Kind | None:
    """The marker the pair's value (`group` of `match`) becomes, or None when it holds no secret."""
    value = match.group(group)
    if secret_key(key):
        if harmless(value) or counts(key, value) or _sizes(match, group):
            return None
        return pair_kind(key)
    if (vendor_key(key) and vendor_credential(value)) or (shaped_key(key) and key_shaped(value)):
        return Kind.vendor_key
    return None


def _sizes(match: re.Match[str], group: str) -> bool:
    # `kubectl describe secret` prints each key's size (`password:  16 bytes`), not its value.
    return group == "bare" and match.group(group).isdigit() and match.string.startswith(" bytes", match.end())


def _pair(match: re.Match[str]) -> str:
    group = value_group(match)
    kind = _value_kind(match.group("key"), match, group) if group is not None else None
    if group is None or kind is None:
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start()] + marker(kind)
