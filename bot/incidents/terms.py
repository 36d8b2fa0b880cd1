"""The words records and questions are matched on: lower-cased, split where words split, the
words every sentence has left out. One function for records and queries alike, so a word is
written the same way on both sides of a match."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

# Words that say nothing of an incident: matching on them would make every record look alike.
_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is
    it its just me my no not of on or our so than that the their them then there these this to up us was
    we were what when where which who why will with you your seen again today now please opsbot same last
    week still yesterday going happening any some get got like""".split()
)
# Words and the names operators give things: `restart-payments`, `db_pool`, `502`, `v1.2.3`.
_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
AS_IF_RECORDS = 100  # the fewest records rarity is judged among (`rarity`)
MAX_TERMS = 400  # distinct terms kept of one record: the index stays small however long a thread


def terms_of(texts: Iterable[str]) -> Counter[str]:
    """How often each term occurs in `texts`. A compound (`restart-payments`) counts as itself and
    as its parts, so `payments` finds it too."""
    counts: Counter[str] = Counter()
    for text in texts:
        for word in _WORD.findall(text.lower()):
            parts = [part for part in re.split(r"[_.\-]", word) if part] if re.search(r"[_.\-]", word) else []
            for term in (word, *parts):
                if term not in _STOP and len(term) > 1:
                    counts[term] += 1
    return Counter(dict(counts.most_common(MAX_TERMS)))


def rarity(total: int, holding: int) -> float:
    """How much a term weighs: BM25's inverse document frequency, from the live records (`total`,
    counted as at least AS_IF_RECORDS) and those holding it. A few records are no sample of what is
    rare: with one, every word it holds would weigh a fifth of one it lacks, and nothing would ever
    be recalled. redis.py's candidate script ranks with the same formula."""
    total = max(total, AS_IF_RECORDS)
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))
