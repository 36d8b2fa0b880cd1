"""Private keys, which span lines: PEM, OpenSSH, PGP and PuTTY key blocks, whole or cut
(`redact_armoured`), and the bare body lines of a key whose armour is missing (`grep -v BEGIN`,
a tail, a block of a log that starts inside a key: `redact_body_runs`).

These rules look at several lines at once, so they run on whole texts (a log block, a command's
output) before anything is split into lines; every other rule is line-local. A scan that looks
at a few lines of a large block asks `in_body_run` about each of them instead of searching the
whole block for body runs.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..span import Span
from .markers import Kind, marker

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
MARKER = marker(Kind.pem)


def redact_armoured(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    return _redact_tails(_PEM_BLOCK.sub(_pem_block, text))


def _pem_block(match: re.Match[str]) -> str:
    # A key cut before its END line (an output cap, `head`) is still a key; a BEGIN line with no
    # key material after it is someone writing about keys.
    if match.group("end") or _BASE64_RUN.search(match.group("body")):
        return MARKER
    return match.group(0)


def _redact_tails(text: str) -> str:
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
        pieces += [text[done:start], MARKER]
        done = end.end()
    return "".join(pieces) + text[done:] if pieces else text


# ---------------------------------------------------------------- body lines without armour

# PEM and OpenPGP armour wrap base64 at 64 characters, OpenSSH at 70, MIME at 76. A run of such
# lines holds key material unless it sits under the BEGIN line of something public. Searched
# for from each line break (a literal the engine jumps between), in the text behind a "\n".
_BODY = r"[ \t]*+([A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{76})[ \t]*+\r?"
_WRAPPED = re.compile(rf"\n{_BODY}(?=\n|$)")
_WRAPPED_LINE = re.compile(_BODY)
_LAST_LINE = re.compile(r"[ \t]*+[A-Za-z0-9+/]{2,75}+={0,2}[ \t]*+\r?(?=\n|$)")
_PUBLIC_ARMOUR = re.compile(
    r"-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|X509 CRL|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST"
    r"|PUBLIC KEY|RSA PUBLIC KEY|EC PARAMETERS|DH PARAMETERS|PKCS7|CMS|PGP PUBLIC KEY BLOCK|PGP SIGNATURE"
    r"|PGP SIGNED MESSAGE|SSH2 PUBLIC KEY)-----"
)
_HEADER_LINE = re.compile(r"[ \t]*(?:[A-Za-z][\w-]{0,30}:.*)?\r?")  # armour headers and blank lines
RUN_LINES = 2


def redact_body_runs(text: str) -> str:
    """Runs of at least RUN_LINES consecutive wrapped lines of random base64 (mixed case and a
    digit on every line: hex digests and words are not), with the short last line after them."""
    pieces: list[str] = []
    done = 0
    run: list[Span] = []  # each line of the run, in `text`
    for found in _WRAPPED.finditer("\n" + text):
        line = Span(found.start(), found.end() - 1)  # the "\n" found first is the one before the line
        if run and line.start != run[-1].end + 1:
            done, run = _close_run(text, run, pieces, done), []
        if _random(found.group(1)):
            run.append(line)
        else:
            done, run = _close_run(text, run, pieces, done), []
    done = _close_run(text, run, pieces, done)
    return "".join(pieces) + text[done:] if pieces else text


def _close_run(text: str, run: list[Span], pieces: list[str], done: int) -> int:
    if len(run) < RUN_LINES or _public(text, run[0].start):
        return done
    start, end = run[0].start, run[-1].end
    last = _LAST_LINE.match(text, end + 1) if text.startswith("\n", end) else None
    if last is not None:
        end = last.end()
    pieces += [text[done:start], MARKER]
    return end


def in_body_run(text: str, start: int, end: int) -> bool:
    """Whether the line at `text[start:end]` is one that `redact_body_runs` would hide: a wrapped
    line of a run, or the short last line after one."""
    line = text[start:end]
    if _wrapped(line):
        first, length = _run_around(text, start, end)
        return length >= RUN_LINES and not _public(text, first)
    if start < 2 or not _LAST_LINE.fullmatch(line):
        return False
    above = text.rfind("\n", 0, start - 1) + 1
    if not _wrapped(text[above : start - 1]):
        return False
    first, length = _run_around(text, above, start - 1)
    return length >= RUN_LINES and not _public(text, first)


_RUN_REACH = 400  # lines looked at around one: a key body is far shorter


class Run(NamedTuple):
    """A run of wrapped lines."""

    first: int  # where its first line starts
    length: int  # in lines


def _run_around(text: str, start: int, end: int) -> Run:
    """The run of wrapped lines holding the line at [start, end)."""
    first, length = start, 1
    for _ in range(_RUN_REACH):
        if first < 2:
            break
        above = text.rfind("\n", 0, first - 1) + 1
        if not _wrapped(text[above : first - 1]):
            break
        first, length = above, length + 1
    below = end
    for _ in range(_RUN_REACH):
        if below >= len(text):
            break
        after = text.find("\n", below + 1)
        after = len(text) if after == -1 else after
        if not _wrapped(text[below + 1 : after]):
            break
        below, length = after, length + 1
    return Run(first, length)


def _wrapped(line: str) -> bool:
    found = _WRAPPED_LINE.fullmatch(line)
    return found is not None and _random(found.group(1))


def _random(line: str) -> bool:
    return any(c.isdigit() for c in line) and any(c.isupper() for c in line) and any(c.islower() for c in line)


def _public(text: str, start: int) -> bool:
    """Whether the lines above `start`, past armour headers and blank lines, begin something public."""
    end = start - 1  # the line break before the run
    for _ in range(8):
        if end < 0:
            return False
        begin = text.rfind("\n", 0, end) + 1
        line = text[begin:end]
        if _PUBLIC_ARMOUR.search(line):
            return True
        if not _HEADER_LINE.fullmatch(line):
            return False
        end = begin - 1
    return False


def might_be_key_material(line: str) -> bool:
    """Whether a line on its own could be part of a key: an armour line or a wrapped body line
    (a text shown line by line holds such lines back until it is clear what they were)."""
    stripped = line.strip()
    return stripped.startswith("-----") or _WRAPPED_LINE.fullmatch(line) is not None
