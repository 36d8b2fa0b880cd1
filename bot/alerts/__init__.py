"""Alert webhooks (Alertmanager v4, PagerDuty v3) in, normalised `Alert`s out.

This package only receives: it authenticates, parses, caps and deduplicates, then hands each new
alert to a callback. Choosing a runbook and talking to Slack happen elsewhere, on a worker.
expression.py says which metrics source and expression an alert names, for a chart in its thread.
"""

from .alertmanager import parse_alertmanager
from .expression import SOURCE_LABEL, AlertExpression, alert_expression
from .hooks import ALERTMANAGER_PATH, PAGERDUTY_PATH, AlertAuth, AlertHooks
from .models import Alert, BadPayload
from .pagerduty import parse_pagerduty, verify_signature
from .queue import ALIVE_TTL_S, AlertQueue

__all__ = [
    "ALERTMANAGER_PATH",
    "ALIVE_TTL_S",
    "Alert",
    "AlertExpression",
    "AlertAuth",
    "AlertHooks",
    "AlertQueue",
    "BadPayload",
    "PAGERDUTY_PATH",
    "SOURCE_LABEL",
    "alert_expression",
    "parse_alertmanager",
    "parse_pagerduty",
    "verify_signature",
]
