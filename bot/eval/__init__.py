"""`opsbot eval`: a suite of incident scenarios run against the configured model, through opsbot's
loop and a bare loop side by side, on fixture environments built in temporary directories."""

from .report import markdown, tables
from .results import RESULTS_VERSION, EvalReport
from .runner import evaluate
from .suite import SuiteError, load_suite

__all__ = ["RESULTS_VERSION", "EvalReport", "SuiteError", "evaluate", "load_suite", "markdown", "tables"]
