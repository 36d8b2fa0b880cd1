"""Where the terminal writes: a rich Console per stream, plain or rendered, and the one boundary
between text from outside and a person's terminal.

Rich decides colour as users expect: none when the stream is not a terminal, none when NO_COLOR
is set (no-color.org), FORCE_COLOR and TERM=dumb honoured; so opsbot never decides it by hand.
Markup and highlighting are off: what a tool or the model wrote is printed as written, never
read as styling (a log line with `[red]` in it stays that text).

Nor is it read as terminal control. Most of what opsbot shows it did not write (log lines, a
command's output, config values, the model's answer and the arguments it chose, records), and a
terminal obeys escape sequences wherever they come from: `ESC ] 52 ;` writes the clipboard,
`ESC ] 0 ;` renames the window, `ESC ] 8 ;` hides a link behind other text. So all of it is
written inert (tools/inert.py: a control character or bidi override is shown spelled out,
`\\x1b]52;…`), at the type boundary, as rich keeps markup apart from text: `Screen` is a Console
that takes every string it is given as text to make inert, and makes every text segment it
writes inert again. Only rich's own styling and cursor movement reach the terminal as sequences.
`echo` is the same boundary for what click writes (stdout of `ask`, records, errors), and
`InertFormatter` for log records, which quote outside text too."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import IO

import click
from rich.console import Console, ConsoleOptions, HighlighterType, JustifyMethod, OverflowMethod, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from ...tools.inert import inert


class Screen(Console):
    """A Console through which no outside text acts on the terminal.

    Strings are made inert as they become rich Text, before rich lays them out: a spelled `\\x07`
    then takes the columns it shows, and rich's own silent removal of BEL, BS, VT, FF and CR never
    hides that one was there. Every text segment is made inert again as it is written, which
    covers text that reached rich another way: a markdown entity such as `&#x202e;` is decoded by
    the parser, after its source was made inert (`inert` is idempotent, so twice is once)."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        return super().render_str(
            inert(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            # A control segment is rich's own (cursor movement of the live area), never outside text.
            yield segment if segment.control else Segment(inert(segment.text), segment.style)


def console(stream: IO[str]) -> Console:
    # soft_wrap: a long line is the terminal's to wrap, so a copied line is one line.
    return Screen(file=stream, highlight=False, markup=False, emoji=False, soft_wrap=True)


def say(out: Console, text: str, style: str | None = None, end: str = "\n") -> None:
    # Made text by the console it is written to: on a Screen, that is where it is made inert.
    out.print(out.render_str(text, style=style or "", markup=False, emoji=False, highlight=False), end=end)


def echo(text: str, err: bool = False, fg: str | None = None) -> None:
    """A line through click, for what is piped as often as read (`ask`'s stdout, records, errors):
    written as it is, tabs and all (rich would expand them), but inert. JSON text stays JSON that
    decodes to the same data (tools/inert.py)."""
    click.secho(inert(text), fg=fg, err=err)


class InertFormatter(logging.Formatter):
    """Log records as `format` says, inert: a record quotes a question, a tool's arguments, an
    error's message, and stderr is a terminal (`opsbot -v`, `opsbot serve` in a shell) as often as
    a file. A JSON record stays JSON that decodes to the same data."""

    def format(self, record: logging.LogRecord) -> str:
        return inert(super().format(record))


def rendered(out: Console, plain: bool) -> bool:
    """Whether `out` gets the live view (spinner, markdown): a terminal, unless --plain."""
    return out.is_terminal and not plain and not out.is_dumb_terminal
