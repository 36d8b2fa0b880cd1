"""A second opinion from a detector nobody on this project wrote: Yelp's detect-secrets.

Whatever one of its vendor plugins finds in a corpus line, it must not find again once opsbot has
redacted that line; and its plugins must find nothing in anything opsbot left of the corpus. (Why
opsbot does not run detect-secrets itself: docs/security.md, "Secrets: what is redacted, and by what".)
"""

from __future__ import annotations

import pytest

from opsbot.tools.redact import redact_text
from tests.corpus.detectors import PLUGINS, findings
from tests.corpus.secrets import KINDS, SecretKind, leaks


def test_there_are_vendor_plugins_to_ask() -> None:
    assert len(PLUGINS) >= 20


@pytest.mark.parametrize("kind", KINDS, ids=[kind.id for kind in KINDS])
def test_what_detect_secrets_finds_in_a_line_is_gone_once_redacted(kind: SecretKind) -> None:
    redacted = redact_text(kind.line)
    left = [(plugin, found) for plugin, found in findings(redacted) if leaks(kind.secret, found)]
    assert left == []


def test_detect_secrets_catches_a_fair_share_of_the_corpus_raw() -> None:
    """The corpus is not one detect-secrets has never heard of: its plugins recognise many of its
    lines before opsbot touches them (and opsbot all of them, by the tests above)."""
    recognised = [kind.id for kind in KINDS if any(leaks(kind.secret, found) for _, found in findings(kind.line))]
    assert len(recognised) >= 12, recognised
