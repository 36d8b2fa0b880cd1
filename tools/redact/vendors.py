"""Vendor keys with no shape of their own, known by what stands before them on their line.

A Datadog API key is 32 hex characters, a Twilio auth token too, an Algolia admin key, a
PagerDuty routing key; a Datadog application key or a New Relic license key is 40. Written as
`KEY=value` they are `pairs.py`'s; elsewhere (`API Key invalid (<key>)` in the Datadog agent's
log, `Client('AC…', '<token>')` in a Twilio call) only the words before them tell. A value of a
key's shape (`key_shaped`) is hidden when, on the same line and within a few characters after:

- a vendor's name or variable (`datadog`, `twilio`, `NEW_RELIC`, `algolia`, `pagerduty`...), as
  trufflehog's detectors ask (its `PrefixRegex`: the keyword within 40 characters before the
  key; github.com/trufflesecurity/trufflehog, pkg/detectors/) and gitleaks' keyword rules name
  them (datadog-access-token, algolia-api-key, mailgun-*, new-relic-*);
- a vendor SDK's call (`Client(`, `SearchClient.create(`, `auth=(`), its other arguments (an
  account SID of 34 characters) between;
- words naming a key (`API Key invalid (`, `routing key`, `license key`).

What keeps ordinary hex readable: the value must come after the word, never before it
(`md5sum` and `sha256sum` lines, `git log --format='%H %s'` and dpkg's lists put the digest
first); a value labelled as an identifier or a digest right before it (`trace_id=`, `commit`,
`sha1:`, `request_id`) is one whatever came earlier; a UUID, a `traceparent` or a 64-hex digest
has no key's length; after words naming a key, a path segment (`/snapshots/<sha>/`) is a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ahocorasick

from .keys import words
from .markers import Kind, harmless, marker

_RUN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-")
_HEX_LOWER = frozenset("0123456789abcdef")
_HEX_UPPER = frozenset("0123456789ABCDEF")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_LONGEST = 50  # Mailgun's `<32 hex>-<8 hex>-<8 hex>`
# Whole runs of key characters (the look-arounds) of a key's lengths, judged by `key_shaped`.
_KEY_LENGTH = re.compile(
    r"(?<![A-Za-z0-9_+-])(?:[A-Za-z0-9_+-]{20}|[A-Za-z0-9]{32}|[A-Za-z0-9]{40}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})"
    r"(?![A-Za-z0-9_+-])"
)


# A key named for its vendor (`DATADOG_APP=...`, `sentry: 5f1e...`) holds a credential when its
# value reads like one: long, random, and no URL or path (`sentry_url: https://...` is a setting).
_VENDOR_VALUE = re.compile(r"[A-Za-z0-9_=+.-]{16,}")


def vendor_credential(value: str) -> bool:
    """Whether the value under a key named for its vendor reads like a credential."""
    if _VENDOR_VALUE.fullmatch(value) is None or harmless(value):
        return False
    return sum(c.isdigit() for c in value) >= 2 and any(c.isalpha() for c in value)


def key_shaped(value: str) -> bool:
    """Whether `value` has the length and make of a vendor key with no prefix: 32 or 40 hex
    characters (one case); 32 or 40 letters and digits, mixed; 20 characters of a PagerDuty REST
    API key; Mailgun's `<32 hex>-<8 hex>-<8 hex>`. And random: at least 12 distinct characters."""
    size = len(value)
    chars = set(value)
    if len(chars) < 12:
        return False
    has_digit = any(c.isdigit() for c in value)
    if size in (32, 40) and (chars <= _HEX_LOWER or chars <= _HEX_UPPER):
        return has_digit and any(c.isalpha() for c in value)
    if size in (32, 40) and chars <= _ALNUM:
        return has_digit and any(c.isupper() for c in value) and any(c.islower() for c in value)
    if size == 20:
        return _pagerduty_rest_key(value)
    parts = value.split("-")
    return (
        size == _LONGEST
        and [len(part) for part in parts] == [32, 8, 8]
        and all(set(part) <= _HEX_LOWER for part in parts)
    )


def _pagerduty_rest_key(value: str) -> bool:
    # trufflehog's pagerdutyapikey: `[a-z]\+[a-zA-Z]{9}-[a-z]{2}-[a-z0-9]{5}`; keys issued since
    # are 20 characters of [A-Za-z0-9_+-] (developer.pagerduty.com/docs/authentication).
    if value[1] == "+" and value[11] == "-" and value[14] == "-":
        head, first, middle, tail = value[0], value[2:11], value[12:14], value[15:]
        return (
            head in _LOWER
            and first.isalpha()
            and set(middle) <= _LOWER
            and set(tail) <= _LOWER | frozenset("0123456789")
        )
    return (
        set(value) <= _RUN
        and any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


@dataclass(frozen=True)
class Anchor:
    """What announces a key: `needle` (lower case), the marker's kind, and how many characters
    after it the key may start."""

    needle: str
    kind: Kind
    reach: int
    between: int  # how many words may stand between it and the key (`API Key invalid (`: one)
    word: bool = False  # words naming a key: whole words only (not in `apikeyring`), and no path after


_NEAR = 40  # trufflehog's PrefixRegex distance
_CALL = 64  # an SDK call: the account SID or application id before the key fits
# Words between: a vendor's log line says a few (`newrelic agent: connecting with license <key>`);
# a key after words naming it follows them closely (`API Key invalid (<key>)`). Further on, a
# 40-hex value is more likely a commit a sentence names than a key.
_VENDOR_WORDS = 4
_KEY_WORDS = 2
# The vendors' names, with where the make of their keys and the keyword come from.
_VENDORS = (
    "datadog",  # trufflehog datadogtoken; gitleaks datadog-access-token; docs.datadoghq.com (api-app-keys)
    "twilio",  # trufflehog twilio (a 32-hex key beside an `AC` SID); twilio.com/docs/iam/credentials/api
    "newrelic", "new_relic", "new-relic", "new relic",  # gitleaks new-relic-*; 40-character license keys
    "mailgun",  # gitleaks mailgun-private-api-token, mailgun-signing-key; trufflehog mailgun
    "algolia",  # gitleaks algolia-api-key; trufflehog algoliaadminkey (a 10-character application id, then the key)
    "pagerduty", "pager_duty",  # trufflehog pagerdutyapikey; developer.pagerduty.com/docs/events-api-v2 (routing_key)
)  # fmt: skip
# SDK calls as each vendor's quick start writes them: twilio-python `Client(account_sid, auth_token)`,
# algoliasearch `SearchClient.create(app_id, api_key)`, Mailgun's `requests.post(..., auth=("api", key))`,
# pdpyras `EventsAPISession(routing_key)` / `APISession(api_key)`.
_CALLS = ("client(", "searchclient", "auth=(", "session(")
_WORDS = tuple(
    Anchor(needle, Kind.secret_value, _NEAR, _KEY_WORDS, word=True)
    for needle in (
        "api key", "api_key", "api-key", "apikey", "app key", "app_key", "application key", "application_key",
        "license key", "license_key", "licence key", "routing key", "routing_key", "integration key",
        "integration_key", "service key", "service_key", "admin key", "search key", "ingest key", "insert key",
    )
)  # fmt: skip
ANCHORS: tuple[Anchor, ...] = (
    *(Anchor(needle, Kind.vendor_key, _CALL, _VENDOR_WORDS) for needle in (*_VENDORS, *_CALLS)),
    *_WORDS,
)
NEEDLES = tuple(anchor.needle for anchor in ANCHORS)

# A value so labelled is an identifier or a digest, whatever word came before it on the line.
_ID_WORDS = frozenset(
    "id ids uuid guid sha sha1 sha256 sha512 md5 md5sum hash digest checksum crc commit rev revision etag"
    " fingerprint thumbprint trace traceparent span parent request req correlation nonce build version container"
    " image layer object blob tx txn transaction event message msg sid serial".split()
)
_LABEL_GAP = 6  # separators between a label and its value: `trace_id="`, `commit (`
_LABEL_LONGEST = 64


def _automaton() -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for anchor in ANCHORS:
        automaton.add_word(anchor.needle, anchor)
    automaton.make_automaton()
    return automaton


# Every anchor in one pass (pyahocorasick, as tools/redact/text.py finds every rule's needles).
_ANCHORS = _automaton()
_LOOK_BACK = max(anchor.reach + len(anchor.needle) for anchor in ANCHORS)
# Lower case for ASCII letters only: every offset stays where it was (str.lower() lengthens İ).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def redact_near_vendors(text: str) -> str:
    """Every key-shaped value that an anchor announces: values are looked for only in the stretch
    after each anchor (stretches that overlap read once), and each found looks back along its
    line for the anchor that announces it."""
    lowered = text.lower()
    if len(lowered) != len(text):  # lower() lengthened a character (İ): keep every offset
        lowered = text.translate(_ASCII_LOWER)
    stretches: list[list[int]] = []
    for last, anchor in _ANCHORS.iter(lowered):
        start, stop = last + 1, last + 2 + anchor.reach + _LONGEST
        if stretches and start <= stretches[-1][1]:
            stretches[-1][1] = max(stretches[-1][1], stop)
        else:
            stretches.append([start, stop])
    pieces: list[str] = []
    done = 0
    for start, stop in stretches:
        for run in _KEY_LENGTH.finditer(text, max(start, done), stop):
            if run.end() < len(text) and text[run.end()] in _RUN:
                continue  # cut by the stretch's end: a longer run
            if not key_shaped(run.group(0)) or _labelled(text, run.start()):
                continue
            kind = _announced(text, run.start())
            if kind is not None:
                pieces += [text[done : run.start()], marker(kind)]
                done = run.end()
    return "".join(pieces) + text[done:] if pieces else text


def _announced(text: str, start: int) -> Kind | None:
    """The kind of the anchor that announces the value at `start`, if one does: a vendor's
    before a word's."""
    lowest = max(0, start - _LOOK_BACK)
    line = text.rfind("\n", lowest, start)
    begin = lowest if line == -1 else line + 1
    found: Kind | None = None
    for last, anchor in _ANCHORS.iter(text[begin:start].translate(_ASCII_LOWER)):
        end = begin + last + 1
        if start - end > anchor.reach or _words_between(text, end, start) > anchor.between:
            continue
        if anchor.word and not (_whole_word(text, end - len(anchor.needle), end) and text[start - 1] != "/"):
            continue  # after words naming a key, a path segment (`/snapshots/<sha>/`) is a path
        if found is None or anchor.kind is Kind.vendor_key:
            found = anchor.kind
    return found


def _words_between(text: str, end: int, start: int) -> int:
    """Words from `end` to `start`: not the rest of the anchor's own (`algoliasearch:`, the `'AC…',`
    glued to `Client(`), and not punctuation (`=`, `(`)."""
    tokens = text[end:start].split()
    if tokens and not text[end].isspace():
        tokens = tokens[1:]
    return sum(1 for token in tokens if any(c.isalnum() for c in token))


def _whole_word(text: str, start: int, end: int) -> bool:
    if start and text[start - 1].isalpha():
        return False
    after = text[end : end + 2].lower()
    # A plural is the same word (`api keys`); a longer word is another (`api keyring`).
    return not after[:1].isalpha() or (after[:1] == "s" and not after[1:2].isalpha())


def _labelled(text: str, start: int) -> bool:
    """Whether the value at `start` is labelled as an identifier or a digest (`trace_id=`)."""
    gap = start
    while gap > 0 and start - gap < _LABEL_GAP and text[gap - 1] in " \t=:'\"([{,":
        gap -= 1
    label_end = gap
    while gap > 0 and label_end - gap < _LABEL_LONGEST and (text[gap - 1].isalnum() or text[gap - 1] in "_.-"):
        gap -= 1
    parts = words(text[gap:label_end])
    return bool(parts) and parts[-1] in _ID_WORDS
