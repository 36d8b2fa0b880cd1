"""The expression an alert was raised on and the metrics source it names, for a chart in its thread.

Prometheus links each alert to its expression: Alertmanager's `generatorURL` is
`<prometheus>/graph?g0.expr=<expr>&g0.tab=1`. The source is the one the alert names: a label or
annotation `opsbot_metrics_source` giving a source's name under `policy.metrics`, else the
source whose URL has the generatorURL's scheme, host and port (a Prometheus opsbot already
queries). An alert naming no configured source gets no chart: opsbot queries only what the
policy declares, never a URL an alert brings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

from ...config.policy import MetricsSource
from .models import Alert

SOURCE_LABEL = "opsbot_metrics_source"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class AlertExpression(NamedTuple):
    """A configured metrics source's name, and the PromQL expression the alert was raised on."""

    source: str
    expr: str


def alert_expression(alert: Alert, sources: Mapping[str, MetricsSource]) -> AlertExpression | None:
    """What to chart for `alert`, or None: no expression in its generatorURL, or no source named."""
    if not alert.url:
        return None
    expr = next(iter(parse_qs(urlsplit(alert.url).query).get("g0.expr", [])), "").strip()
    if not expr:
        return None
    named = alert.labels.get(SOURCE_LABEL) or alert.annotations.get(SOURCE_LABEL)
    if named:
        return AlertExpression(named, expr) if named in sources else None
    origin = _origin(alert.url)
    for name in sorted(sources):
        if origin is not None and _origin(str(sources[name].url)) == origin:
            return AlertExpression(name, expr)
    return None


class _Origin(NamedTuple):
    scheme: str
    host: str
    port: int


def _origin(url: str) -> _Origin | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is no number, a malformed IPv6 host
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return _Origin(parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme])
