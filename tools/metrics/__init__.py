"""query_metrics and find_metrics: PromQL against Prometheus-compatible sources named under
`policy.metrics` (config/policy/metrics.py has their format), over Prometheus' HTTP API.

- client: one GET (`httpx`), the source's headers read from the environment variables the policy
  names, and every failure a structured result: a PromQL error carries Prometheus' own position
  (400 bad_data: `1:14: parse error: ...`) as `invalid_args`; a slow or unreachable server is
  `timeout` / `unavailable`, retryable; a query too big for the server is `failed`, with a hint.
- summary: the series the model reads (min/avg/max/last, change, peak, crossings of the middle of
  its range) instead of raw points; totals when more than `max_series` matched.
- discovery: metric names matching words with type, help and labels (`/api/v1/label/__name__/values`,
  `/api/v1/metadata`, `/api/v1/series` with `match[]` and `limit`), and the nearest existing names
  when a query names a metric that does not exist (`not_found`).
- query: the tools, access per source, since/until read by query_logs' parser (tools/logs), the
  step (given, or the range divided into `max_points`), and the result. A range result keeps the
  points of its shown series in `ToolResult.kept`, in the order of `data["series"]`, and says its
  `query`, for charts (bot/charts/).

The executor redacts every string of the result (label values included) as for any tool.
"""

from .args import FindMetricsArgs, QueryMetricsArgs
from .query import find_metrics_tool, query_metrics_tool

__all__ = ["FindMetricsArgs", "QueryMetricsArgs", "find_metrics_tool", "query_metrics_tool"]
