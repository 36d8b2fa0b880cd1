"""Slack's agent sessions, and stopping opsbot's work in a thread.

status.py carries a thread's lifecycle to Slack (processing, active, suspended, closed) and
remembers a team that has no sessions; runs.py keeps which run works in which thread, across
processes, and the stop marks set on them; watch.py gives up this process's stopped runs;
stopping.py takes a stop from wherever a person asked for it.
"""

from .runs import RunBoard, RunEntry, Stop, StopRequest
from .status import Sessions, SessionStatus, session_title
from .stopping import STOP_NOTE_EVENT, Stopper, stopped_line
from .watch import Running, StopWatch

__all__ = [
    "STOP_NOTE_EVENT",
    "RunBoard",
    "RunEntry",
    "Running",
    "SessionStatus",
    "Sessions",
    "Stop",
    "StopRequest",
    "StopWatch",
    "Stopper",
    "session_title",
    "stopped_line",
]
