"""Prometheus-compatible metrics sources the model may query (Prometheus, Thanos, Mimir,
VictoriaMetrics: anything that speaks Prometheus' HTTP API), one entry under `policy.metrics`:

```yaml
metrics:
  prod:
    description: Prometheus of the production cluster
    url: https://prometheus.example.com      # the API is under <url>/api/v1/
    headers: {Authorization: PROM_AUTH}      # header -> the environment variable holding its value
    timeout_s: 10                            # per request, and Prometheus' own query timeout
    max_series: 20                           # series summarised; the rest are counted, not shown
    max_points: 300                          # points per series of a range query: sets the default step
    access: {groups: [oncall]}               # who may query this source; empty = anyone
```

A header's value is never written in the YAML: `headers` names the environment variable that
holds it (`PROM_AUTH="Bearer ..."`), read when a query is sent, so a missing variable is a
clear refusal rather than an unauthenticated request.
"""

from __future__ import annotations

from pydantic import Field

from .http import HttpSource


class MetricsSource(HttpSource):
    max_series: int = Field(
        default=20, ge=1, le=500, description="series summarised per query; more are counted and cut, the cut said"
    )
    max_points: int = Field(
        default=300,
        ge=10,
        le=11_000,
        description="points per series of a range query; the step defaults to the range divided by this",
    )

    def api(self, path: str) -> str:
        """The URL of an API endpoint (`query_range` -> <url>/api/v1/query_range)."""
        return self.endpoint(f"api/v1/{path}")
