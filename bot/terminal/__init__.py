"""The terminal front end: `opsbot chat` (line editing, history, live progress, rendered answers,
Ctrl-C to give a question up, approvals asked y/N) and the plain output `opsbot ask` prints.

Only what `ask` needs is exposed here; `bot.terminal.session` (ChatSession) is imported when a
chat starts, so `ask` and direct commands never load prompt_toolkit or rich's markdown."""

from bot.terminal.plain import THINKING_NOTE, PlainProgress
from bot.terminal.screen import console
from bot.terminal.user import TERMINAL_USER

__all__ = ["THINKING_NOTE", "TERMINAL_USER", "PlainProgress", "console"]
