"""query_alerts and create_silence: an Alertmanager's state and silences, for Alertmanagers named
under `policy.alertmanagers` (config/policy/alertmanagers.py has their format), over its API v2.

- matchers: label matchers as the model writes them, checked before sending (`invalid_args`
  saying what is wrong), quoted for `filter=`, or as a silence's matchers.
- client: one request (tools/http.py: headers from the environment, timeout and unreachable
  retryable), Alertmanager's refusals in words.
- query: the read tool: GET /api/v2/alerts (active, silenced and inhibited flags) and
  /api/v2/silences with `filter=`; alerts and live silences capped, counts when cut; `show`.
- silences: a silence asked for (`SilenceRequest`), checked against the policy (who may, at most
  `silences.max_duration_s`, at least one name=value matcher), and created by `create_silence`
  only once a person approved it (tools/writes.py holds the create_silence tool that asks;
  bot/approvals creates it).

The executor redacts every string of a result and makes it inert, as for any tool: alert labels
and annotations are outside text.
"""

from .args import CreateSilenceArgs, QueryAlertsArgs
from .query import query_alerts_tool
from .silences import SilenceRequest, create_silence, show_silence, silence_refusal, silence_request

__all__ = [
    "CreateSilenceArgs",
    "QueryAlertsArgs",
    "SilenceRequest",
    "create_silence",
    "query_alerts_tool",
    "show_silence",
    "silence_refusal",
    "silence_request",
]
