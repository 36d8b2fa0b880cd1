"""The terminal front end: `opsbot chat` (line editing, history, live progress, rendered answers,
Ctrl-C to give a question up, approvals asked y/N) and the plain output `opsbot ask` prints.

Only what `ask` and the other commands need is exposed here, with what every command writes
through (`echo`, the log formatter: screen.py); `bot.terminal.session` (ChatSession) is imported
when a chat starts, so `ask` and direct commands never load prompt_toolkit or rich's markdown."""

from .charts import show_charts
from .plain import PlainProgress
from .screen import InertFormatter, console, echo, say
from .steps import checked_lines
from .user import TERMINAL_USER

__all__ = [
    "TERMINAL_USER",
    "InertFormatter",
    "PlainProgress",
    "checked_lines",
    "console",
    "echo",
    "say",
    "show_charts",
]
