"""What every part that moves a stored run on works with: waiting.py (a person's decision) and
takeover.py (a run nobody holds) each take a run where stepping.py left it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ...config.policy import Policy
from .commits import Commits
from .leases import Leases
from .stepping import Steps


@dataclass(kw_only=True)
class RunParts:
    policy: Policy
    commits: Commits
    leases: Leases
    steps: Steps
    clock: Callable[[], datetime]
