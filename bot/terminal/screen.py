"""Where the terminal writes: a rich Console per stream, plain or rendered.

Rich decides colour as users expect: none when the stream is not a terminal, none when NO_COLOR
is set (no-color.org), FORCE_COLOR and TERM=dumb honoured; so opsbot never decides it by hand.
Markup and highlighting are off: what a tool or the model wrote is printed as written, never
read as styling (a log line with `[red]` in it stays that text)."""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.text import Text


def console(stream: IO[str]) -> Console:
    # soft_wrap: a long line is the terminal's to wrap, so a copied line is one line.
    return Console(file=stream, highlight=False, markup=False, emoji=False, soft_wrap=True)


def say(out: Console, text: str, style: str | None = None, end: str = "\n") -> None:
    out.print(Text(text, style=style or ""), end=end)


def rendered(out: Console, plain: bool) -> bool:
    """Whether `out` gets the live view (spinner, markdown): a terminal, unless --plain."""
    return out.is_terminal and not plain and not out.is_dumb_terminal
