"""Approvals: a person deciding on a write command or a runbook step, for every front end.

The service (service.py) stores requests (requests.py) in a store (store.py), applies the one
rule of who may decide (rules.py), claims each decision once, runs exactly the approved command
and hands the outcome back to whoever waits. Front ends only show requests and forward clicks.
"""

from .requests import VIA, VIA_AGENT, Claim, Decision, HandBack, Pending, Verdict
from .rules import deciders_of
from .service import KEEP_AFTER_EXPIRY_S, Approvals, View, Waiting
from .store import ApprovalStore, ApprovalsUnavailable, InProcessApprovalStore, RedisApprovalStore

__all__ = [
    "ApprovalStore",
    "Approvals",
    "ApprovalsUnavailable",
    "Claim",
    "Decision",
    "HandBack",
    "InProcessApprovalStore",
    "KEEP_AFTER_EXPIRY_S",
    "Pending",
    "RedisApprovalStore",
    "Verdict",
    "View",
    "VIA",
    "VIA_AGENT",
    "Waiting",
    "deciders_of",
]
