"""The level names opsbot knows: one table, by rank (0 DEBUG < 1 INFO < 2 WARN < 3 ERROR).

Three readers, one table:
- the tool's argument (args.py) and the direct command (bot/commands.py) call `parse_level`:
  any spelling below in any case, one letter, or a standard number, named by its rank; anything
  else is an `UnknownLevel` that lists the levels and the nearest one ("did you mean WARN?");
- the matcher (match.py) looks for level *words* in a line (`level_rank`, `level_tokens`);
- a reader of a log format that keeps the level in a known place (klog's `E1129`, logcat's
  `W/tag`, pino's `"level":50`) calls `rank_of` for the token it found there, or `numeric_rank`
  with the format's numbering. One letter and numbers are never looked for in free text: `E` and
  `50` are levels only where a format puts them.

Where each spelling comes from is listed with its source in tests/test_log_levels.py."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import StrEnum

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
LEVEL_HEAD_CHARS = 200  # a line's level word is looked for this far into it


class Level(StrEnum):
    """A minimum level, named by its rank: what every spelling is normalised to."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"

    @property
    def rank(self) -> int:
        return LEVELS.index(self.value)


# Level words, lower case, as logs and people write them. Each is also looked for in log lines,
# so a word goes here only if it is a level wherever it stands alone near a line's start.
WORD_RANKS: dict[str, int] = {
    "trace": 0, "debug": 0, "verbose": 0, "trc": 0, "dbg": 0, "vrb": 0, "dbug": 0,
    "info": 1, "notice": 1, "information": 1, "informational": 1, "inf": 1,
    "warn": 2, "warning": 2, "wrn": 2,
    "err": 3, "error": 3, "eror": 3, "crit": 3, "critical": 3, "fatal": 3, "ftl": 3, "alert": 3,
    "emerg": 3, "emergency": 3, "panic": 3, "dpanic": 3, "pnc": 3, "severe": 3,
}  # fmt: skip

# One-letter codes (klog, Android logcat, glog): a level only where a format puts one.
LETTER_RANKS: dict[str, int] = {"t": 0, "v": 0, "d": 0, "i": 1, "n": 1, "w": 2, "e": 3, "f": 3, "c": 3, "a": 3}
_LONGEST = 2 * max(map(len, WORD_RANKS))  # longer text is no level, nor a typo of one


class Scheme(StrEnum):
    """Numberings of levels. They disagree (30 is pino's info but Python's WARNING), so a number
    means a level only together with the scheme its format uses."""

    syslog = "syslog"  # RFC 5424 severity: 0 emergency ... 3 error, 4 warning, 5 notice, 6 info, 7 debug
    pino = "pino"  # pino and bunyan: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal
    python = "python"  # logging's levelno: 10 DEBUG, 20 INFO, 30 WARNING, 40 ERROR, 50 CRITICAL


_SYSLOG_RANKS = {0: 3, 1: 3, 2: 3, 3: 3, 4: 2, 5: 1, 6: 1, 7: 0}
# A bare number given as a level (not read from a line): syslog's severities and pino/bunyan's
# levels, the numbers JSON logs and journald carry; they do not overlap. Python's levelno would
# collide with pino's and is read only with Scheme.python.
_BARE_NUMBERS = {**_SYSLOG_RANKS, 10: 0, 20: 0, 30: 1, 40: 2, 50: 3, 60: 3}


def numeric_rank(value: int, scheme: Scheme) -> int | None:
    """The rank of level number `value` in `scheme`, None if it names no level there. pino and
    Python let programs add levels between the standard ones (pino's 35): such a level takes the
    rank of the standard level below it."""
    if scheme is Scheme.syslog:
        return _SYSLOG_RANKS.get(value)
    if value <= 0:  # pino's silent is Infinity; Python's NOTSET is 0: neither is a line's level
        return None
    info, warn, error = (30, 40, 50) if scheme is Scheme.pino else (20, 30, 40)
    return 0 if value < info else 1 if value < warn else 2 if value < error else 3


def rank_of(token: str) -> int | None:
    """The rank of one level token as a format writes it: a word (`eror`, `WARNING`) or one
    letter (`E`, `w`), any case. Not a number: numbers need their scheme (`numeric_rank`)."""
    key = token.strip().lower()
    return WORD_RANKS.get(key, LETTER_RANKS.get(key))


# ---------------------------------------------------------------- a level given by someone


@dataclass(frozen=True)
class UnknownLevel:
    """A level nobody knows, with the nearest known one when there is one."""

    given: str
    suggestion: Level | None

    @property
    def message(self) -> str:
        shown = self.given if len(self.given) <= 40 else self.given[:40] + "…"
        guess = f" (did you mean {self.suggestion.value}?)" if self.suggestion else ""
        return (
            f"unknown level {shown!r}{guess}; levels: {', '.join(LEVELS)} (a minimum), also written as WARNING, "
            "ERR, CRIT, FATAL and other common spellings, as one letter (D, I, W, E, F) or as a number "
            "(syslog 0-7, pino/bunyan 10-60)"
        )


def parse_level(given: str | int) -> Level | UnknownLevel:
    """The level `given` names: a word or letter of the table in any case and spacing, or a bare
    number (syslog 0-7, pino/bunyan 10-60). Never raises: anything else is an UnknownLevel."""
    if isinstance(given, int) and not isinstance(given, bool):
        rank = _BARE_NUMBERS.get(given)
        return Level(LEVELS[rank]) if rank is not None else UnknownLevel(str(given), None)
    text = str(given)
    key = text.strip().lower()
    if key.isascii() and key.isdigit() and len(key) <= _LONGEST:  # int() refuses 4,300 digits
        return parse_level(int(key))
    rank = WORD_RANKS.get(key, LETTER_RANKS.get(key))
    if rank is not None:
        return Level(LEVELS[rank])
    # Nothing that long is near a level word, and comparing it would cost time for nothing.
    return UnknownLevel(text, _suggestion(key) if len(key) <= _LONGEST else None)


def misspelling_of(word: str, max_edits: int, min_length: int = 4) -> str | None:
    """The level word of at least `min_length` letters that `word` is at most `max_edits` edits
    from (a swap of neighbours is one edit), starting with the same letter, nearest first; None if
    there is none. Typos seldom hit the first letter, and requiring it keeps `race`, `earn` and
    `manic` (one edit from trace, warn, panic) what they are."""
    key = word.strip().lower()
    if not key:
        return None
    found = [
        (distance, spelling)
        for spelling in WORD_RANKS
        if len(spelling) >= min_length and spelling[0] == key[0]
        for distance in (_edits(key, spelling, max_edits),)
        if distance <= max_edits
    ]
    return min(found)[1] if found else None


def _suggestion(key: str) -> Level | None:
    """The level of the known word nearest `key`: difflib's nearest, else one two edits away
    (difflib's ratio is low for short words: `wrnn` is two edits from warn)."""
    close = difflib.get_close_matches(key, [w for w in WORD_RANKS if len(w) > 1], n=1)
    word = close[0] if close else misspelling_of(key, 2, min_length=3)
    return Level(LEVELS[WORD_RANKS[word]]) if word is not None else None


def _edits(a: str, b: str, ceiling: int) -> int:
    """Edits from `a` to `b` (insert, delete, replace, swap neighbours: optimal string alignment),
    or ceiling + 1 as soon as it is plain they are more than `ceiling` apart."""
    if abs(len(a) - len(b)) > ceiling:
        return ceiling + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        row = [i]
        for j, other in enumerate(b, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (char != other))
            if before is not None and i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                cost = min(cost, before[j - 2] + 1)
            row.append(cost)
        if min(row) > ceiling:
            return ceiling + 1
        before, previous = previous, row
    return previous[-1]


# ---------------------------------------------------------------- level words in log lines

# A level word standing on its own: "ERROR", "[warn]", "level=error", "lvl=eror", "<crit>", "error:".
# ASCII case only: Unicode's would match "ſevere" and "crıt", which name no rank (and the
# lower-cased prefilter never finds them anyway).
_LEVEL_WORD = re.compile(
    r"(?<![^\s\[<(=:\"'|])(" + "|".join(sorted(WORD_RANKS, key=len, reverse=True)) + r")(?![^\s\]>):\"',;|])",
    re.IGNORECASE | re.ASCII,
)


# A JSON line's level is its level key, wherever it stands and whatever words its message holds:
# a word (logrus, structlog, GCP's severity) or pino and bunyan's number (getpino.io, bunyan's README).
# The number only as pino and bunyan write it, with no space: a spaced one is Python's json.dumps,
# whose programs number levels as logging does (40 is ERROR there), not as pino (40 is WARN).
_JSON_LEVEL = re.compile(r'"(?:level|lvl|severity|levelname)"\s*:\s*"([A-Za-z]{1,12})"|"level":(\d{1,2})\b')
_JSON_LEVEL_CHARS = 2_000
# pino/bunyan's level numbers.
_PINO_LEVELS = (10, 20, 30, 40, 50, 60)


# Where a format puts a level that is no word, at a line's start: syslog's <PRI> (severity =
# PRI mod 8, RFC 5424 6.2.1), klog's letter before the date ("E1201 10:00:00.123456", Kubernetes'
# system-logs docs), and an access log's status ("... [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 503",
# Apache's CLF and nginx's combined: 5xx counts as ERROR, 4xx as WARN, the rest as INFO).
_PRI = re.compile(r"<(\d{1,3})>")
# Android logcat's letter, read only for a service whose `format` is logcat: after the date, pid
# and tid (threadtime, the default), after the date (time), or first (brief, `E/Tag( 123):`);
# developer.android.com/tools/logcat.
_LOGCAT = re.compile(r"(?:\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+(?:\d+\s+\d+\s+)?)?([VDIWEFA])[ /]")
_LOGCAT_LETTERS = "vdiwefa"
_KLOG = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d\d")
_ACCESS_STATUS = re.compile(r'\S+ \S+ \S+ \[[^\]]{20,40}\] "[^"]*" (\d)\d\d ')
_STATUS_RANKS = {"5": 3, "4": 2}


def level_rank(line: str, logcat: bool = False) -> int | None:
    """The rank of the line's level (0 DEBUG ... 3 ERROR): where its format puts one (a JSON
    level key, syslog's PRI, klog's letter, an access log's status), else the first level word
    near the line's start. logcat's letter stands mid-line, after pid and tid, and a lone `E`
    between spaces is too common elsewhere to be looked for in every log (a level query was 70%
    slower): it is read when the service says its format is logcat (`logcat`)."""
    if logcat:
        letter = _LOGCAT.match(line)
        if letter is not None:
            return LETTER_RANKS[letter[1].lower()]
    if line.startswith("{"):
        keyed = _JSON_LEVEL.search(line, 0, _JSON_LEVEL_CHARS)
        if keyed is not None:
            return rank_of(keyed[1]) if keyed[1] else numeric_rank(int(keyed[2]), Scheme.pino)
    placed = _placed_rank(line)
    if placed is not None:
        return placed
    found = _LEVEL_WORD.search(line, 0, LEVEL_HEAD_CHARS)
    return WORD_RANKS[found[1].lower()] if found else None


def _placed_rank(line: str) -> int | None:
    pri = _PRI.match(line)
    if pri is not None and int(pri[1]) <= 191:
        return numeric_rank(int(pri[1]) % 8, Scheme.syslog)
    letter = _KLOG.match(line)
    if letter is not None:
        return LETTER_RANKS[letter[1].lower()]
    status = _ACCESS_STATUS.match(line)
    return _STATUS_RANKS.get(status[1], 1) if status is not None else None


def level_tokens(min_rank: int, logcat: bool = False) -> tuple[str, ...]:
    """Substrings one of which every line of at least `min_rank` holds, in lower case: "err"
    stands for "error" too, so a block is searched once per stem, not once per word; the
    leading digit of pino's numbers under "level" (`"level":5` stands for 50 to 59); and with
    `logcat`, logcat's letter as its three layouts write it."""
    words = sorted(w for w, rank in WORD_RANKS.items() if rank >= min_rank)
    stems = tuple(w for w in words if not any(o != w and o in w for o in words))
    digits = sorted({str(n)[0] for n in _PINO_LEVELS if (numeric_rank(n, Scheme.pino) or 0) >= min_rank})
    pino = tuple(f'"level":{d}' for d in digits)
    letters = [letter for letter in _LOGCAT_LETTERS if LETTER_RANKS[letter] >= min_rank] if logcat else []
    logcat_tokens = tuple(token for letter in letters for token in (f" {letter} ", f" {letter}/", f"\n{letter}/"))
    return stems + pino + _placed_tokens(min_rank) + logcat_tokens


def _placed_tokens(min_rank: int) -> tuple[str, ...]:
    """What every line whose format puts a level of at least `min_rank` at its start holds, in
    lower case. A token starting with a newline stands at a line's start (the prefilter also
    tries it at the text's start)."""
    letters = sorted(letter for letter, rank in LETTER_RANKS.items() if rank >= min_rank)
    # A line starting with such a letter is rare where lines start with a time: one pass a letter.
    klog = tuple(f"\n{letter}" for letter in letters if letter in "iwef")
    statuses = [digit for digit, rank in (("5", 3), ("4", 2), ("3", 1), ("2", 1), ("1", 1)) if rank >= min_rank]
    # Any PRI: the severity is read from the number, which a substring cannot tell apart.
    return ("\n<", *klog, *(f'" {digit}' for digit in statuses))
