"""Which metrics exist, so the model does not invent names: names matching words with their help
text and labels (find_metrics), and the nearest existing names when a query names one that does
not exist (query_metrics' `not_found`)."""

from __future__ import annotations

import difflib
import re
from typing import Any, NamedTuple

from ..base import ErrorType, ToolResult
from .client import Client

# Series read per metric to show its labels and a few of their values.
SERIES_LOOKED_AT = 200
VALUES_SHOWN = 5
# Metrics whose labels are looked up (a request each): find_metrics' first names, the names of an empty query.
LABELLED = 5
# Requests one call may send at most, so the executor can wait for the slowest: find_metrics' names,
# metadata and labels; query_metrics' query, then for an empty result the names and labels.
FIND_REQUESTS = 2 + LABELLED
QUERY_REQUESTS = 2 + LABELLED
NEAREST = 5

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^}]*\}|\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])([A-Za-z_:][\w:]*)(?![\w:]|\s*\()")
# Words of PromQL that are not metric names, even when no parenthesis follows them.
_KEYWORDS = frozenset(
    "and or unless by without on ignoring group_left group_right offset bool inf nan atan2 "
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio".split()
)


def named_metrics(query: str) -> list[str]:
    """The metric names a query selects by name (`rate(http_requests_total{job="x"}[5m])` ->
    [http_requests_total]); names in strings, label matchers, ranges and groupings left out."""
    text = _GROUPING.sub(" ", _BRACES.sub(" ", _STRINGS.sub(" ", query)))
    names = [m for m in _IDENTIFIER.findall(text) if m.lower() not in _KEYWORDS]
    return list(dict.fromkeys(names))


def metric_names(client: Client) -> list[str] | ToolResult:
    data = client.get("label/__name__/values", [])
    return data if isinstance(data, ToolResult) else [str(name) for name in data]


def nearest(name: str, names: list[str]) -> list[str]:
    """Existing names closest to `name`: spelled alike first, then sharing its words."""
    close = difflib.get_close_matches(name, names, n=NEAREST, cutoff=0.6)
    words = set(name.lower().split("_")) - {"total", "seconds", "bytes", "count", "sum"}
    sharing = sorted((n for n in names if words & set(n.lower().split("_"))), key=len)
    return list(dict.fromkeys([*close, *sharing]))[:NEAREST]


def missing_metric(client: Client, query: str) -> ToolResult | None:
    """`not_found` naming the nearest existing names when the query names a metric the source lacks."""
    names = metric_names(client)
    if isinstance(names, ToolResult):
        return None  # the query itself answered; the empty result stands without the lookup
    known = set(names)
    for name in named_metrics(query):
        if name not in known:
            near = nearest(name, names)
            return ToolResult.failure(
                ErrorType.not_found,
                f"metric {name!r} does not exist in {client.name}",
                hint=f"nearest existing names: {', '.join(near)}" if near else "use find_metrics to find names",
                data={"nearest": near},
            )
    return None


def labels_of(client: Client, metric: str) -> dict[str, list[str]] | ToolResult:
    """A metric's labels and a few of their values, from up to SERIES_LOOKED_AT of its series."""
    data = client.get("series", [("match[]", metric), ("limit", str(SERIES_LOOKED_AT))])
    if isinstance(data, ToolResult):
        return data
    values: dict[str, set[str]] = {}
    for series in data[:SERIES_LOOKED_AT]:
        for label, value in series.items():
            if label != "__name__":
                values.setdefault(label, set()).add(str(value))
    return {label: sorted(found)[:VALUES_SHOWN] for label, found in sorted(values.items())}


class _Rank(NamedTuple):
    missed: int  # minus the words the name holds as whole parts
    length: int


def _rank(name: str, wanted: list[str]) -> _Rank:
    """Names holding the words as whole parts first (`load` finds node_load1 before ..._reloads_total),
    then the shorter."""
    parts = re.split(r"[_:]", name.lower())
    return _Rank(-sum(any(p.rstrip("0123456789") == w for p in parts) for w in wanted), len(name))


def find(client: Client, words: str, limit: int) -> ToolResult:
    """Metric names holding every word (else any word), with help and type, the first LABELLED with labels."""
    names = metric_names(client)
    if isinstance(names, ToolResult):
        return names
    wanted = [w for w in re.split(r"[\s_]+", words.lower()) if w]
    every = [n for n in names if all(w in n.lower() for w in wanted)]
    found = sorted(every or [n for n in names if any(w in n.lower() for w in wanted)], key=lambda n: _rank(n, wanted))
    metadata = client.get("metadata", [("limit_per_metric", "1")])
    about: dict[str, Any] = {} if isinstance(metadata, ToolResult) else metadata
    metrics = []
    for rank, name in enumerate(found[:limit]):
        entry: dict[str, Any] = {"name": name}
        if about.get(name):
            entry["type"] = about[name][0].get("type")
            entry["help"] = about[name][0].get("help")
        labels = labels_of(client, name) if rank < LABELLED else None
        if isinstance(labels, dict):
            entry["labels"] = labels
        metrics.append(entry)
    shown = f", showing {limit}" if len(found) > limit else ""
    return ToolResult.success({"summary": f"{len(found)} metric name(s) match {words!r}{shown}", "metrics": metrics})
