"""Alert webhooks (Alertmanager v4, PagerDuty v3) in, normalised `Alert`s out.

This package only receives: it authenticates, parses, caps and deduplicates, then hands each new
alert to a callback. Choosing a runbook and talking to Slack happen elsewhere, on a worker.
"""

from .alertmanager import parse_alertmanager
from .hooks import ALERTMANAGER_PATH, PAGERDUTY_PATH, AlertAuth, AlertHooks
from .models import Alert, BadPayload
from .pagerduty import parse_pagerduty, verify_signature
from .queue import ALIVE_TTL_S, AlertQueue

__all__ = [
    "ALERTMANAGER_PATH",
    "ALIVE_TTL_S",
    "Alert",
    "AlertAuth",
    "AlertHooks",
    "AlertQueue",
    "BadPayload",
    "PAGERDUTY_PATH",
    "parse_alertmanager",
    "parse_pagerduty",
    "verify_signature",
]
