"""Runbook runs: a reviewed runbook (config/policy/runbooks.py) run step by step with the ops
tools, recorded in Redis after every step so that it survives restarts and never runs twice.

The front ends (Slack, alerts) start runs and show progress through a `Reporter`; people's
decisions reach a run through the approvals service (bot/approvals), which hands them back to the
engine. Nothing here knows about Slack.
"""

from .engine import RunbookEngine
from .errors import RunRefused
from .explain import model_explainer
from .records import RunRecord, RunStatus, StepKind, StepRecord, StepStatus, runbook_digest
from .recovery import Recovery
from .reporting import Reporter
from .stepping import MAX_STEPS, Explainer
from .store import InProcessRunStore, RedisRunStore, RunStore, RunStoreUnavailable
from .templates import TemplateError, condition_holds, fill, fill_text

__all__ = [
    "Explainer",
    "InProcessRunStore",
    "MAX_STEPS",
    "Recovery",
    "RedisRunStore",
    "Reporter",
    "RunRecord",
    "RunRefused",
    "RunStatus",
    "RunStore",
    "RunStoreUnavailable",
    "RunbookEngine",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "TemplateError",
    "condition_holds",
    "fill",
    "fill_text",
    "model_explainer",
    "runbook_digest",
]
