"""Alertmanagers whose state the model may read (firing alerts, silences) and where it may ask
for a silence, one entry under `policy.alertmanagers`:

```yaml
alertmanagers:
  main:
    description: the production Alertmanager
    url: https://alertmanager.example.com    # the API is under <url>/api/v2/
    headers: {Authorization: AM_AUTH}        # header -> the environment variable holding its value
    timeout_s: 10                            # per request
    max_alerts: 30                           # alerts listed per query; the rest are counted, not shown
    max_silences: 20                         # silences listed per query
    access: {groups: [oncall]}               # who may read it, and ask for a silence; empty = anyone
    silences:
      max_duration_s: 86400                  # the longest silence that may be asked for (24h)
      approvers: {groups: [sre]}             # who may approve one; default: `access`
      self_approval: false                   # whether the asker may approve their own
      approval_ttl_s: 900                    # how long a request waits for a decision
```

Creating a silence changes what pages people, so it is a write: it is never created because the
model asked, only once a person allowed by `silences.approvers` approves the request, exactly as
asked (its Alertmanager, matchers, duration and comment). A silence must name at least one label
with `=`: a silence of regular expressions or negations alone could match everything.
"""

from __future__ import annotations

from pydantic import Field

from .base import Access, Strict
from .http import HttpSource


class Silences(Strict):
    """How silences are asked for on one Alertmanager."""

    max_duration_s: float = Field(
        default=86_400, gt=0, le=30 * 86_400, description="the longest silence that may be asked for, in seconds"
    )
    approvers: Access | None = Field(
        default=None, description="who may approve a silence; default: the source's `access`"
    )
    self_approval: bool = Field(default=False, description="whether the asker may approve their own silence")
    approval_ttl_s: float = Field(default=900, gt=0, le=86_400, description="how long a request waits for a decision")


class AlertmanagerSource(HttpSource):
    max_alerts: int = Field(default=30, ge=1, le=500, description="alerts listed per query; more are counted and cut")
    max_silences: int = Field(
        default=20, ge=1, le=500, description="silences listed per query; more are counted and cut"
    )
    silences: Silences = Field(
        default_factory=Silences, description="asking for silences: [below](#policyalertmanagersnamesilences)"
    )

    @property
    def deciders(self) -> Access:
        """Who may approve (or deny) a silence: `silences.approvers`, or else whoever may use the source."""
        return self.silences.approvers if self.silences.approvers is not None else self.access

    def api(self, path: str) -> str:
        """The URL of an API v2 endpoint (`alerts` -> <url>/api/v2/alerts)."""
        return self.endpoint(f"api/v2/{path}")
