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

from typing import Annotated

from pydantic import Field, StringConstraints

from .base import Access, Strict
from .commands import EnvName

# An HTTP header name (RFC 9110 token characters).
HeaderName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")]
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")]


class MetricsSource(Strict):
    description: str = Field(default="", description="what the source holds, shown to the model")
    url: HttpUrl = Field(description="the server's base URL (http or https); its API is under <url>/api/v1/")
    headers: dict[HeaderName, EnvName] = Field(
        default_factory=dict,
        description="headers sent with every request, each naming the environment variable that holds "
        "its value (Authorization: PROM_AUTH); never the value itself",
    )
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="per request; also Prometheus' query timeout")
    max_series: int = Field(
        default=20, ge=1, le=500, description="series summarised per query; more are counted and cut, the cut said"
    )
    max_points: int = Field(
        default=300,
        ge=10,
        le=11_000,
        description="points per series of a range query; the step defaults to the range divided by this",
    )
    access: Access = Field(default_factory=Access, description="who may query this source; default: anyone")

    def api(self, path: str) -> str:
        """The URL of an API endpoint (`query_range` -> <url>/api/v1/query_range)."""
        return f"{self.url.rstrip('/')}/api/v1/{path}"
