"""redact_text, and its parts for callers that split text into lines themselves.

Rules that look at several lines at once (private keys, Kubernetes env pairs and Secret data)
run on the whole text first (`redact_spanning`, then `pem.redact_body_runs`); every other rule
stays within a line (`redact_lines`), so `redact_lines` gives each line of a text what it would
give the whole text. query_logs relies on that: it redacts a block of lines whole with the
spanning rules, then only the lines its filters may keep with the line rules.

Every rule names needles (lower case) that any text it changes holds. One pass finds them all;
lines that hold none are left as they are, and a rule runs only where its needles are: most lines
meet none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import ahocorasick

from ..span import Span
from . import context, headers, kubernetes, pairs, pem, urls, vendors
from .shapes import SHAPES


@dataclass(frozen=True)
class Rule:
    name: str
    needles: tuple[str, ...]  # lower case; empty: the rule always runs
    apply: Callable[[str], str]


def _spanning(text: str) -> str:
    # Every block a log scan reads comes through here: three case-sensitive `in` (the needles
    # these patterns must find as written), no lower-cased copy of a megabyte.
    text = pem.redact_armoured(text)
    if "Secret" in text:
        text = kubernetes.redact_secret_data(text)
    if "alue" in text:
        text = kubernetes.redact_env_pairs(text)
    return text


LINE_RULES: tuple[Rule, ...] = (
    *(Rule(f"{shape.kind} token", shape.needles, shape.apply) for shape in SHAPES),
    Rule("aws secret beside its key id", context.AWS_NEEDLES, context.redact_aws_secrets),
    Rule("url credentials", urls.NEEDLES, urls.redact_urls),
    Rule("authorization headers", headers.NEEDLES, headers.redact_headers),
    Rule("docker auth", context.DOCKER_NEEDLES, context.redact_docker_auth),
    Rule("curl -u user:password", context.USER_FLAG_NEEDLES, context.redact_user_flags),
    Rule("secret key pairs", pairs.NEEDLES, pairs.redact_pairs),
    Rule("random value after a secret word", context.WORD_NEEDLES, context.redact_after_words),
    Rule("vendor key after its vendor's name", vendors.NEEDLES, vendors.redact_near_vendors),
)


def _automaton(rules: tuple[Rule, ...]) -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for needle in {n for rule in rules for n in rule.needles}:
        automaton.add_word(needle, needle)
    automaton.make_automaton()
    return automaton


# Every line rule's needles in one Aho-Corasick automaton (pyahocorasick, in C): one pass over a
# text finds which needles occur and where, however many there are. A check per needle (`in`)
# costs a pass each, and a regex alternation of them all is slower still.
_LINE_NEEDLES = _automaton(LINE_RULES)
# Stretches of lines holding needles closer than this are redacted as one.
_GAP = 4_096


class Triggered(NamedTuple):
    present: set[str]  # the needles found
    spans: list[Span]  # stretches of whole lines holding them, in order


def _triggered(text: str, lowered: str) -> Triggered:
    """The needles `text` holds, and the stretches of whole lines that hold them, in order."""
    present: set[str] = set()
    spans: list[Span] = []
    # The stretch being gathered, from `first` to the end of its last line; a Span once it is
    # whole, not one per line: a log block may hold a needle on every line.
    first = line_end = -1
    for end, needle in _LINE_NEEDLES.iter(lowered):
        present.add(needle)
        if end < line_end:
            continue
        start = text.rfind("\n", 0, end) + 1
        if first == -1 or start - line_end > _GAP:
            if first != -1:
                spans.append(Span(first, line_end))
            first = start
        line_end = text.find("\n", end)
        line_end = len(text) if line_end == -1 else line_end
    if first != -1:
        spans.append(Span(first, line_end))
    return Triggered(present, spans)


def _run_rules(present: set[str], text: str) -> str:
    for rule in LINE_RULES:
        if not present.isdisjoint(rule.needles):
            text = rule.apply(text)
    return text


def redact_spanning(text: str) -> str:
    """The rules that need more than one line and find a needle first: armoured private keys,
    Kubernetes Secret data and env pairs. The bare body lines of a key have no needle: whole
    texts get `pem.redact_body_runs`, a scan asks `pem.in_body_run` about the lines it keeps."""
    return _spanning(text)


def redact_lines(text: str) -> str:
    """The rules that stay within a line, on every line of `text`: only the lines that hold a
    needle of some rule are looked at, by the rules whose needles they hold."""
    lowered = text.lower()
    present, spans = _triggered(text, lowered)
    if not spans:
        return text
    if len(lowered) != len(text) or spans[0] == Span(0, len(text)):
        # One stretch is the whole text; or lower() lengthened a character (İ) and offsets in the
        # lowered text do not line up, so it all goes through every rule it may need.
        return _run_rules(present, text)
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces += [text[done:start], _run_rules(present, text[start:end])]
        done = end
    return "".join(pieces) + text[done:]


def redact_text(text: str) -> str:
    if not text:
        return text  # nothing to hide: an empty preamble or content is asked about on every step
    return redact_lines(pem.redact_body_runs(redact_spanning(text)))
