"""Text opsbot did not write, made plain for Slack: nothing in it can link, mention, page or unfurl.

What comes from outside (a model's answer, a log line, command output, an alert's fields, thread
history the model repeats) reaches Slack as data. Slack and its markdown make links in many ways:
mrkdwn's `<url|label>`, `<url>` and `<mailto:…>` (docs.slack.dev, "Formatting text for app
surfaces"); CommonMark's inline links and images, reference definitions and autolinks (spec,
sections 6.3-6.5 and 4.7); and the URLs and domains Slack links by itself (`https://…`, `www.…`,
`example.com/path`, `user@example.com`), found here with linkify-it and its full list of top-level
domains. A link to a host not in `slack.link_domains` is written instead as its label and, in
brackets, where it pointed, without query string, fragment or userinfo and with its dots broken:
`label (evil[.]example/p.png)`. Neither a click nor an unfurl can then carry data out in a URL (the
2024 Slack AI exfiltration: an injected answer whose link's query string held a secret). A listed
host, or a subdomain of one, keeps its link. `data:`, `javascript:` and other non-web URLs are never
links. Slack's special syntax (`<!here>`, `<!channel>`, `<!everyone>`, `<!subteam^…>`, `<@U…>`,
`<#C…>`) and every other `<`, `>` and `&` become entities, shown as typed; control characters and
bidi overrides are spelled out (tools/inert.py).

Code spans and blocks are guarded like any other text: Slack documents no surface on which a URL
inside them can never become a link. Bare IP addresses are left alone (Slack does not link them;
with a scheme they are URLs like any other), so log lines full of addresses stay readable.

opsbot's own Slack syntax (a mention of a user id Slack gave it, a date) is marked with `own()`:
a marker holding a random per-process nonce, which no outside text can know, so cannot forge. The
guard keeps a marked token as written and treats everything else as outside text; a marker cut in
half by a length cap falls apart into outside text, which fails safe (the token shows as typed).
"""

from __future__ import annotations

import functools
import re
import secrets
from typing import Any

from linkify_it import LinkifyIt
from linkify_it.tlds import TLDS

from ...tools.inert import inert
from ...tools.span import Span

_OPEN, _CLOSE = "\ue000", "\ue001"
_NONCE = secrets.token_hex(8)
_OWN = re.compile(f"{_OPEN}{_NONCE}([^{_OPEN}{_CLOSE}]*){_CLOSE}")
_MARKS = re.compile(f"[{_OPEN}{_CLOSE}]")


def own(token: str) -> str:
    """Slack syntax opsbot wrote itself (`<@U123>`, `<!date^…>`), kept as written on the way out."""
    return f"{_OPEN}{_NONCE}{_MARKS.sub('', token)}{_CLOSE}"


_ENTITY = re.compile(r"&(lt|gt|amp);")
_CHARS = {"lt": "<", "gt": ">", "amp": "&"}

# Each pattern below is linear: the alternatives inside a repetition start with different characters.
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]{1,31}"
_LABEL = r"(?:[^\[\]\n\\]|\\.|\[[^\[\]\n]*\])*"
_BARE_DEST = r"(?:[^\s()<>\\]|\\\S|\([^\s()]*\))"
_DEST = rf"<[^<>\n]*>|{_BARE_DEST}*"
_TITLE = r"""(?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?"""
_ADDRESS = r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9\-]{1,63})*"
_GAP = r"(?:[ \t]*\n)?[ \t]*"  # CommonMark: spaces, and at most one line ending
_STRUCTURED = re.compile(
    "|".join(
        (
            # mrkdwn's link (`<url|label>`, `<url>`, `<mailto:…>`), which is also CommonMark's autolink
            rf"(?P<slack><(?P<surl>{_SCHEME}:[^<>|\s]*)(?:\|(?P<slabel>[^<>\n]*))?>)",
            # CommonMark's email autolink: `<user@example.com>`, whatever the domain's ending
            rf"<(?P<email>{_ADDRESS})>",
            # a link reference definition: `[ref]: url "title"`, alone on its line
            rf"(?P<definition>^[ ]{{0,3}}\[(?P<dlabel>{_LABEL})\]:{_GAP}"
            rf"(?P<ddest><[^<>\n]*>|{_BARE_DEST}+){_TITLE}[ \t]*$)",
            # an inline link or image: `[label](url "title")`, `![alt](url)`
            rf"(?P<bang>!?)\[(?P<label>{_LABEL})\]\({_GAP}(?P<dest>{_DEST}){_TITLE}{_GAP}\)",
        )
    ),
    re.MULTILINE,
)
# What is left of inline link syntax the patterns above did not take (a label over lines, an odd
# destination) is broken apart, so markdown cannot make a link of it. (A definition they did not
# take keeps its form: the URL in it is found as a bare one, so at worst it points nowhere.)
_LINK_OPENER = re.compile(r"\]\(")
# URLs linkify-it misses: a scheme right after a letter, `=` or `_` (`url=https://…`, which Slack
# may well link), and scripts and inline data, which only markdown would link.
_SCHEMED = re.compile(r"(?i)(?:(?:https?|ftps?|sftp|wss?)://|mailto:)[^\s<>\"`]+")
_SCRIPT_URL = re.compile(r"(?i)\b(?:(?:javascript|vbscript):\S+|data:[a-z]+/[a-z0-9.+\-]+[;,]\S*)")
# linkify-it takes no domain right after these (`_evil.com/x_`, `*evil.com*`, `host:evil.com`),
# where Slack's formatting or its own eye may still see one: a second look has them as spaces.
_MASK = str.maketrans(dict.fromkeys("*_~`:", " "))
# A URL found runs on to the next space (the second look may have stopped it at a masked `:` or
# `_`, before its query string), less the sentence's or formatting's characters at its end.
_RUNS_ON = re.compile(r"[^\s<>\"`]*")
_TRAILING = ".,;:!?'\")]}*_~`"
_PAIRS = {")": "(", "]": "[", "}": "{"}
_HAS_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_WEB_SCHEMES = frozenset({"http", "https", "ftp", "ftps", "ws", "wss", "sftp"})
_LISTABLE = re.compile(r"(?i)^(?:https?:)?//(?:[^@/?#\\\s]*@)?(?P<host>[a-z0-9.\-]+)(?::\d{1,5})?(?:[/?#][^\\\s]*)?$")
_MAILTO = re.compile(r"(?i)^(?:mailto:)?[^@/?#\\\s]+@(?P<host>[a-z0-9.\-]+)(?:\?[^\\\s]*)?$")
# Labels hold labels (`[<url|label>](url)`); deeper than this, the rest is plain text.
_MAX_DEPTH = 3


@functools.cache
def _linkify() -> Any:
    """linkify-it with every IANA top-level domain (its own default knows a few dozen): a domain
    Slack links without a scheme must be found here too. Built at first use (about 0.1 s)."""
    return LinkifyIt(options={"fuzzy_link": True, "fuzzy_email": True, "fuzzy_ip": False}).tlds(TLDS, True)


class Outside:
    """Outside text made plain for Slack; links to `link_domains` (and their subdomains) stay links."""

    def __init__(self, link_domains: frozenset[str] = frozenset()) -> None:
        self.link_domains = link_domains

    def text(self, value: str) -> str:
        """`value` as it may go to Slack: its `own()` tokens as written, the rest made plain."""
        out, pos = [], 0
        for match in _OWN.finditer(value):
            out += [self._outside(value[pos : match.start()]), match.group(1)]
            pos = match.end()
        out.append(self._outside(value[pos:]))
        return "".join(out)

    def _outside(self, text: str) -> str:
        if not text:
            return ""
        # Entities are read back first, so text escaped upstream (blocks.escape) and text that was
        # not are judged alike; every `<`, `>` and `&` is written as an entity again at the end.
        raw = _ENTITY.sub(lambda m: _CHARS[m.group(1)], inert(_MARKS.sub("\ufffd", text)))
        return self._render(raw, 0)

    def _render(self, text: str, depth: int) -> str:
        if depth > _MAX_DEPTH:
            return self._plain(text)
        out, pos = [], 0
        for match in _STRUCTURED.finditer(text):
            out += [self._plain(text[pos : match.start()]), self._structured(match, depth)]
            pos = match.end()
        out.append(self._plain(text[pos:]))
        return "".join(out)

    def _structured(self, match: re.Match[str], depth: int) -> str:
        if match.group("slack"):
            url, label = match.group("surl"), match.group("slabel")
            shown_label = self._render(label, depth + 1) if label else ""
            if self._listed(url):
                return f"<{_escape(url)}|{shown_label}>" if label is not None else f"<{_escape(url)}>"
            return _labelled(shown_label, _shown(url))
        if match.group("email"):
            address = match.group("email")
            # Kept in its brackets, as entities: as typed, and no autolink (`<!subteam^…|@x>` is one too).
            return f"&lt;{_escape(address) if self._listed(address) else _shown('mailto:' + address)}&gt;"
        if match.group("definition"):
            label, dest = match.group("dlabel"), _unbracket(match.group("ddest"))
            if self._listed(dest):
                return f"[{_escape(label)}]: {_escape(dest)}"
            return f"{self._render(label, depth + 1)}: {_shown(dest)}"
        label, dest = match.group("label"), _unbracket(match.group("dest"))
        shown_label = self._render(label, depth + 1)
        if self._listed(dest):
            return f"{match.group('bang')}[{shown_label}]({_escape(dest)})"
        return _labelled(shown_label or ("image" if match.group("bang") else ""), _shown(dest))

    def _plain(self, text: str) -> str:
        """Text between link syntax: bare URLs made plain (or kept, listed), the rest escaped."""
        out, pos = [], 0
        for start, end in _urls(text):
            raw = text[start:end]
            url = raw if _HAS_SCHEME.match(raw) or raw.startswith("//") or _is_address(raw) else "//" + raw
            out += [_escape(_broken(text[pos:start])), _escape(raw) if self._listed(url) else _shown(url)]
            pos = end
        out.append(_escape(_broken(text[pos:])))
        return "".join(out)

    def _listed(self, url: str) -> bool:
        """Whether `url` leads to a listed host, read strictly: any doubt (a backslash, a space,
        an odd host) makes it unlisted."""
        match = _LISTABLE.match(url) or _MAILTO.match(url)
        if match is None:
            return False
        host = match.group("host").lower().removesuffix(".")
        return any(host == domain or host.endswith("." + domain) for domain in self.link_domains)


def _labelled(label: str, shown: str) -> str:
    if not shown:
        return label
    return f"{label} ({shown})" if label.strip() else shown


def _unbracket(dest: str) -> str:
    return dest[1:-1] if dest.startswith("<") and dest.endswith(">") else dest


def _broken(text: str) -> str:
    return _LINK_OPENER.sub("] (", text)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _shown(url: str) -> str:
    """Where `url` points, as text that links nowhere: host (dots broken), port and path for a web
    URL; the address for mail; only the scheme for anything else (`data:`, `javascript:`, ...)."""
    scheme, colon, rest = url.partition(":")
    if not colon or "/" in scheme or scheme.startswith("//"):
        scheme, rest = "", url  # no scheme: `//host/…`, `host/…`, a relative path
    kind = scheme.lower()
    if kind == "mailto" or (not kind and _is_address(rest)):
        address = re.split(r"[?#]", rest, maxsplit=1)[0]
        return _escape(_dots(address))
    if kind and kind not in _WEB_SCHEMES:
        return f"{_escape(kind)}: link left out"
    if rest.startswith("//"):
        rest = rest[2:]
        end = re.search(r"[/?#\\]", rest)
        authority, tail = (rest[: end.start()], rest[end.start() :]) if end else (rest, "")
        host = authority.rpartition("@")[2]  # userinfo dropped
    else:
        host, tail = "", rest
    path = re.split(r"[?#]", tail, maxsplit=1)[0]  # query string and fragment dropped
    return _escape(_dots(host) + _inert_path(path))


def _dots(host: str) -> str:
    return host.replace(".", "[.]")


def _inert_path(path: str) -> str:
    """`path` with the dots broken only where a link would be found in it (`/a/evil.com/x`), so
    `p.png` stays readable; and no scheme left to start a URL."""
    path = path.replace("://", "[:]//")
    for _ in range(4):
        found = _urls(path)
        if not found:
            return path
        for start, end in reversed(found):
            path = path[:start] + _dots(path[start:end]) + path[end:]
    return _dots(path)


def _urls(text: str) -> list[Span]:
    """Where `text` holds URLs, domains and addresses Slack or markdown could link: in order, apart."""
    if not text:
        return []
    found = (m for each in (text, text.translate(_MASK)) for m in _linkify().match(each) or [])
    spans = [Span(m.index, m.last_index) for m in found]
    spans += [Span(*m.span()) for pattern in (_SCHEMED, _SCRIPT_URL) for m in pattern.finditer(text)]
    merged: list[Span] = []
    for start, end in sorted(spans):
        run = _RUNS_ON.match(text, end)
        end = run.end() if run else end
        if merged and start < merged[-1].end:
            merged[-1] = Span(merged[-1].start, max(end, merged[-1].end))
        else:
            merged.append(Span(start, end))
    return [Span(start, _trimmed(text, start, end)) for start, end in merged if _trimmed(text, start, end) > start]


def _trimmed(text: str, start: int, end: int) -> int:
    """Where the URL at `text[start:end]` ends without its trailing punctuation; a closing bracket
    stays when the URL opened it (`…/Foo_(bar)`)."""
    while end > start and text[end - 1] in _TRAILING:
        closing = text[end - 1]
        if closing in _PAIRS and text.count(_PAIRS[closing], start, end) >= text.count(closing, start, end):
            break
        end -= 1
    return end


def _is_address(raw: str) -> bool:
    local, at, _ = raw.partition("@")
    return bool(at) and "/" not in local
