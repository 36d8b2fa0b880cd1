"""Vendor tokens, recognisable by their shape wherever they appear, beside any key or none.

Each shape follows a rule of gitleaks' default rule set (github.com/gitleaks/gitleaks,
cmd/generate/config/rules/, MIT; the rule id is named beside each) or, where gitleaks has none,
the vendor's documentation; detect-secrets' plugins of the same vendors check the result
(tests/test_secret_corpus.py runs them over everything opsbot redacted). Where gitleaks fixes a
length, the shape takes the whole run of token characters instead (`{36,}` where gitleaks says
`{36}`): a detector only has to find a token, redaction has to hide all of it.

Every pattern starts with a literal (its needle), so the regex engine jumps from one occurrence
of it to the next at C speed; what a token must not follow (a word character, for gitleaks' `\\b`)
and the part of a token that comes before its literal (the 32 hex digits before Mailchimp's
`-us12`) are checked on each match instead. Quantifiers that could overlap are possessive or
bounded, so every shape runs in linear time.
"""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass

from .markers import Kind, marker

_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_HEX = frozenset("0123456789abcdef")
_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@dataclass(frozen=True)
class Before:
    """The part of a token before its literal: `low` to `high` characters of `chars`, and then
    none of `not_after` (a boundary)."""

    chars: frozenset[str] = frozenset()
    low: int = 0
    high: int = 0
    not_after: frozenset[str] = _WORD

    def start(self, text: str, at: int) -> int | None:
        """Where the token whose literal starts at `at` begins, or None if it does not."""
        start = at
        while at - start < self.high and start > 0 and text[start - 1] in self.chars:
            start -= 1
        if at - start < self.low or (start > 0 and text[start - 1] in self.not_after):
            return None
        return start


_BOUNDARY = Before()  # gitleaks' `\b` before a token that starts with a word character


@dataclass(frozen=True)
class Shape:
    """A token recognisable by its shape: `pattern` starts with the literal `needle`."""

    kind: Kind
    needle: str
    _: KW_ONLY
    pattern: re.Pattern[str]
    before: Before | None = _BOUNDARY
    # A vendor prefix alone is not enough for `sk-`: lowercase names such as
    # `sk-learn-model-7d9f8` are common in k8s; real keys are random base62, so they hold a
    # digit and an upper-case letter.
    random: bool = False
    group: int = 0  # only this group is the secret (the host of a webhook URL says what it was)
    source: str = ""

    @property
    def needles(self) -> tuple[str, ...]:
        return (self.needle.lower(),)

    def apply(self, text: str) -> str:
        if self.needle not in text:
            return text
        pieces: list[str] = []
        done = 0
        for match in self.pattern.finditer(text):
            start, end = match.span(self.group)
            if self.before is not None:
                begun = self.before.start(text, match.start())
                if begun is None:
                    continue
                start = min(start, begun)
            if start < done or (self.random and not _random(match.group(self.group))):
                continue
            pieces += [text[done:start], marker(self.kind)]
            done = end
        return "".join(pieces) + text[done:] if pieces else text


def _random(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isupper() for c in token)


def shapes(
    kind: Kind,
    source: str,
    *patterns: str,
    before: Before | None = _BOUNDARY,
    random: bool = False,
    group: int = 0,
) -> list[Shape]:
    """One Shape per pattern; each pattern's needle is its leading literal."""
    return [
        Shape(kind, _literal_prefix(p), pattern=re.compile(p), before=before, random=random, group=group, source=source)
        for p in patterns
    ]


def _literal_prefix(pattern: str) -> str:
    literal = re.match(r"(?:[\w~:/-]|\\\.)+", pattern)
    assert literal is not None, f"a shape's pattern must start with a literal: {pattern}"
    return literal.group(0).replace("\\.", ".")


_AFTER = r"(?![0-9A-Za-z_-])"  # a token ends where token characters do

SHAPES: list[Shape] = [
    # ---- chat and webhooks: only the path is the secret; the host says what it was.
    *shapes(
        Kind.slack_webhook,
        "gitleaks slack-webhook-url",
        r"hooks\.slack\.com/((?:services|workflows|triggers)/[0-9A-Za-z_/+-]{20,}+)",
        before=None,
        group=1,
    ),
    *shapes(
        Kind.slack,
        "gitleaks slack-bot-token, slack-user-token, slack-app-token, slack-config-*-token, slack-legacy-*",
        r"xox[abcdeoprs](?:\.xox[bp])?-[0-9A-Za-z-]{10,}",
        r"xapp-\d-[0-9A-Za-z-]{10,}",
    ),
    *shapes(
        Kind.discord_webhook,
        "discord.com/developers/docs/resources/webhook (gitleaks has only keyword rules for Discord)",
        r"discord(?:app)?\.com/api/webhooks/\d{5,30}/([\w-]{20,}+)",
        before=None,
        group=1,
    ),
    *shapes(
        Kind.teams_webhook,
        "gitleaks microsoft-teams-webhook",
        r"\.webhook\.office\.com/(webhookb2/[^\s\"'<>]{20,}+)",
        r"outlook\.office\.com/(webhook/[^\s\"'<>]{20,}+)",
        before=None,
        group=1,
    ),
    *shapes(
        Kind.telegram,
        "gitleaks telegram-bot-api-token; core.telegram.org/bots/api#authorizing-your-bot",
        r":AA[\w-]{32,}+",
        before=Before(_DIGITS, 5, 16, _WORD | {":"}),
    ),
    # In the Bot API's own URLs the token follows `/bot` with no boundary: api.telegram.org/bot<token>/getMe.
    *shapes(
        Kind.telegram,
        "core.telegram.org/bots/api#making-requests",
        r"/bot(\d{5,16}:AA[\w-]{32,}+)",
        before=None,
        group=1,
    ),
    # ---- AI vendors
    *shapes(Kind.anthropic, "gitleaks anthropic-api-key", r"sk-ant-[0-9A-Za-z_-]{20,}+", random=True),
    *shapes(Kind.openai, "gitleaks openai-api-key", r"sk-(?:proj-|svcacct-|admin-)?[0-9A-Za-z_-]{20,}+", random=True),
    *shapes(
        Kind.huggingface,
        "gitleaks huggingface-access-token, huggingface-organization-api-token",
        rf"hf_[A-Za-z0-9]{{30,}}+{_AFTER}",
        rf"api_org_[A-Za-z0-9]{{30,}}+{_AFTER}",
    ),
    # ---- payments and commerce
    *shapes(
        Kind.stripe,
        "gitleaks stripe-access-token; docs.stripe.com/keys",
        r"sk_(?:live|test)_[0-9A-Za-z]{16,}+",
        r"rk_(?:live|test)_[0-9A-Za-z]{16,}+",
        r"whsec_[0-9A-Za-z+/=]{24,}+",
    ),
    *shapes(
        Kind.square,
        "gitleaks square-access-token, square-secret",
        r"EAAA[\w-]{22,}+",
        r"sq0atp-[\w-]{22,}+",
        r"sq0csp-[\w-]{40,}+",
    ),
    *shapes(Kind.shopify, "gitleaks shopify-access-token and siblings", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32,}+"),
    # ---- code hosting and package registries
    *shapes(
        Kind.github,
        "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat",
        r"gh[opsru]_[0-9A-Za-z]{36,}+",
        r"github_pat_[0-9A-Za-z_]{22,}+",
    ),
    *shapes(
        Kind.gitlab,
        "gitleaks gitlab-pat, gitlab-ptt, gitlab-deploy-token, gitlab-runner-authentication-token and siblings",
        r"gl(?:pat|ptt|dt|rt|cbt|ft|imt|oas|soat|agent)-[0-9A-Za-z_.-]{20,}+",
        r"GR1348941[0-9A-Za-z_-]{20,}+",
    ),
    *shapes(Kind.npm, "gitleaks npm-access-token", rf"npm_[A-Za-z0-9]{{36,}}+{_AFTER}"),
    *shapes(
        Kind.pypi,
        "gitleaks pypi-upload-token; detect-secrets PypiTokenDetector (test.pypi.org)",
        r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[\w-]{50,}+",
    ),
    *shapes(Kind.rubygems, "gitleaks rubygems-api-token", rf"rubygems_[a-f0-9]{{48,}}+{_AFTER}"),
    *shapes(
        Kind.sourcegraph,
        "gitleaks sourcegraph-access-token",
        rf"sgp_(?:[a-fA-F0-9]{{16}}_|local_)?[a-fA-F0-9]{{40,}}+{_AFTER}",
    ),
    # ---- clouds: API keys, OAuth client secrets, access and refresh tokens
    *shapes(
        Kind.gcp,
        "gitleaks gcp-api-key; developers.google.com/identity/protocols/oauth2",
        r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        r"GOCSPX-[0-9A-Za-z_-]{24,}+",
        r"ya29\.[0-9A-Za-z_.-]{20,}+",
    ),
    *shapes(
        Kind.gcp,
        "developers.google.com/identity/protocols/oauth2 (refresh tokens)",
        r"1//0[0-9A-Za-z_-]{30,}+",
        before=Before(not_after=_WORD | {"/"}),
    ),
    *shapes(
        Kind.aws,
        "gitleaks aws-access-token",
        r"A3T[A-Z0-9][A-Z0-9]{16}\b",
        r"AKIA[A-Z0-9]{16}\b",
        r"ASIA[A-Z0-9]{16}\b",
        r"ABIA[A-Z0-9]{16}\b",
        r"ACCA[A-Z0-9]{16}\b",
    ),
    # STS session tokens are base64 of a protobuf that always starts the same way.
    *shapes(
        Kind.aws,
        "docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html (session tokens as issued)",
        r"IQoJb3JpZ2lu[A-Za-z0-9+/]{60,}+={0,2}",
        r"FwoGZXIvYXdz[A-Za-z0-9+/]{60,}+={0,2}",
    ),
    *shapes(
        Kind.azure,
        "gitleaks azure-ad-client-secret",
        r"Q~[\w~.-]{31,34}(?![\w~.-])",
        before=Before(_WORD | {"~", "."}, 4, 4, _WORD | {"~", ".", "-"}),
    ),
    *shapes(
        Kind.digitalocean,
        "gitleaks digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token",
        rf"do[opr]_v1_[a-f0-9]{{64,}}+{_AFTER}",
    ),
    *shapes(Kind.databricks, "gitleaks databricks-api-token", rf"dapi[a-f0-9]{{32}}(?:-\d)?{_AFTER}"),
    *shapes(Kind.heroku, "gitleaks heroku-api-key-v2", rf"HRKU-AA[0-9a-zA-Z_-]{{58,}}+{_AFTER}"),
    *shapes(
        Kind.terraform,
        "gitleaks hashicorp-tf-api-token",
        r"\.atlasv1\.[A-Za-z0-9_=-]{60,}+",
        before=Before(_ALNUM, 14, 14),
    ),
    # ---- secret stores and keys
    *shapes(
        Kind.vault,
        "gitleaks vault-service-token, vault-batch-token; developer.hashicorp.com/vault/docs/concepts/tokens",
        rf"hvs\.[\w-]{{24,}}+{_AFTER}",
        rf"hvb\.[\w-]{{24,}}+{_AFTER}",
        rf"hvr\.[\w-]{{24,}}+{_AFTER}",
    ),
    *shapes(
        Kind.doppler,
        "gitleaks doppler-api-token; docs.doppler.com/docs/token-formats",
        rf"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_-]{{40,}}+{_AFTER}",
    ),
    *shapes(
        Kind.onepassword,
        "gitleaks 1password-service-account-token, 1password-secret-key",
        r"ops_eyJ[A-Za-z0-9+/]{100,}+={0,3}",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
    ),
    *shapes(Kind.age, "gitleaks age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # ---- observability and SaaS
    *shapes(
        Kind.grafana,
        "gitleaks grafana-service-account-token, grafana-cloud-api-token, grafana-api-key",
        r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b",
        r"glc_[A-Za-z0-9+/]{32,}+={0,3}",
        r"eyJrIjoi[A-Za-z0-9]{70,}+={0,3}",
    ),
    *shapes(
        Kind.newrelic,
        "gitleaks new-relic-user-api-key (case-insensitive), new-relic-insert-key, new-relic-browser-api-token",
        r"NRAK-[A-Za-z0-9]{27,}+",
        r"NRII-[A-Za-z0-9-]{32,}+",
        rf"NRJS-[a-f0-9]{{19,}}+{_AFTER}",
    ),
    # Ingest (license) keys issued since 2021: 40 characters, the last four `NRAL`.
    *shapes(
        Kind.newrelic,
        "docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/ (license keys)",
        rf"NRAL{_AFTER}",
        before=Before(_ALNUM, 36, 36),
    ),
    *shapes(
        Kind.sentry,
        "gitleaks sentry-user-token, sentry-org-token",
        r"sntryu_[a-f0-9]{64,}+",
        r"sntrys_eyJ[A-Za-z0-9+/=_]{60,}+",
    ),
    *shapes(Kind.dynatrace, "gitleaks dynatrace-api-token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64,}+"),
    *shapes(
        Kind.atlassian,
        "gitleaks atlassian-api-token; support.atlassian.com/atlassian-account/docs/manage-api-tokens",
        r"ATATT3[A-Za-z0-9_=-]{50,}+",
    ),
    *shapes(Kind.linear, "gitleaks linear-api-key", r"lin_api_[A-Za-z0-9]{40,}+", r"lin_oauth_[A-Za-z0-9]{40,}+"),
    *shapes(Kind.postman, "gitleaks postman-api-token", rf"PMAK-[a-fA-F0-9]{{24}}-[a-fA-F0-9]{{34,}}+{_AFTER}"),
    *shapes(Kind.pulumi, "gitleaks pulumi-api-token", rf"pul-[a-f0-9]{{40,}}+{_AFTER}"),
    *shapes(
        Kind.planetscale,
        "gitleaks planetscale-api-token, planetscale-oauth-token, planetscale-password",
        r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,}+",
    ),
    *shapes(Kind.twilio, "gitleaks twilio-api-key; detect-secrets TwilioKeyDetector", rf"SK[0-9a-fA-F]{{32}}{_AFTER}"),
    *shapes(
        Kind.sendgrid,
        "gitleaks sendgrid-api-token; detect-secrets SendGridDetector",
        rf"SG\.[\w-]{{16,32}}\.[\w-]{{30,}}+{_AFTER}",
    ),
    *shapes(
        Kind.mailchimp,
        "gitleaks mailchimp-api-key; detect-secrets MailchimpDetector",
        rf"-us\d{{1,2}}{_AFTER}",
        before=Before(_HEX, 32, 32),
    ),
    # Mailgun's private API keys before 2019: `key-` and 32 lower-case letters and digits.
    *shapes(
        Kind.mailgun,
        "gitleaks mailgun-private-api-token; trufflehog mailgun; documentation.mailgun.com (authentication)",
        rf"key-[a-z0-9]{{32}}{_AFTER}",
        before=Before(not_after=_WORD | {"-", "."}),
    ),
    *shapes(Kind.jwt, "gitleaks jwt; RFC 7519", r"eyJ[0-9A-Za-z_-]{8,}+\.eyJ[0-9A-Za-z_-]{8,}+\.[0-9A-Za-z_-]*+"),
]
