"""The Home tab as Block Kit, within what Slack takes of a Home view: 100 blocks (Block Kit
reference, "Views": 100 for modals and Home tabs), 3,000 characters a section's text, 150 a
header's. What does not fit is cut and said: a request past the room left is counted and its
thread is where it is decided; a list past its section's text ends with how many more there are.

Everything from outside (the policy's names and descriptions, questions, requests' argv and
reasons) is redacted and escaped here; opsbot's own syntax (mentions, dates, thread links) is
marked with `own()`, and the whole view passes bot/slack/outbound.py as every payload does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ....tools.redact import redact_text
from ...approvals import Pending
from ...commands import NAMES
from ...llm import ModelState
from ..blocks import approval_blocks, escape, section
from ..jobs import ThreadRef
from ..outside import own
from ..principals import OUTSIDER
from .contents import UNREADABLE, HomeContents, Run
from .usable import Usable

Block = dict[str, Any]

MAX_BLOCKS = 100
SECTION_CHARS = 2_900  # what blocks.section keeps of a text (Slack's 3,000, less room for escaping)
HOME_BLOCK = "opsbot_home"  # block ids start with it; a request's buttons' block also names the request
_LINE_CHARS = 200  # one listed thing or run, at most


def home_view(contents: HomeContents, now: datetime) -> dict[str, Any]:
    """The view `views.publish` sets as `contents.user`'s Home tab."""
    head = [{"type": "header", "text": {"type": "plain_text", "text": "opsbot"}}]
    if contents.notice:
        head.append(section(f"*Your last click:* {escape(redact_text(contents.notice))}"))
    rest = [
        {"type": "divider"},
        _list("Your recent runs", _run_lines(contents.runs), "none this week"),
        {"type": "divider"},
        _list("Services you may look at", [_usable_line(u) for u in contents.services], "none"),
        _list("Commands you may run", [_usable_line(u) for u in contents.commands], "none"),
        _list("Runbooks", [_usable_line(u) for u in contents.runbooks], "none"),
        _context(
            f"Direct commands need no model: {', '.join(f'`{name}`' for name in NAMES)} (`/ops help` says what each "
            "takes). Ask anything else in a DM or mention opsbot in a thread."
        ),
        {"type": "divider"},
        section("*Health*\n" + "\n".join(_health_lines(contents))),
        _context("Updated " + _date(now) + ". Open this tab again to refresh it."),
    ]
    room = MAX_BLOCKS - len(head) - len(rest)
    return {"type": "home", "blocks": [*head, *_waiting(contents.waiting, room), *rest]}


def outsider_view() -> dict[str, Any]:
    """The Home tab of a person of a team opsbot does not serve: only that."""
    return {
        "type": "home",
        "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "opsbot"}}, section(OUTSIDER)],
    }


def _waiting(waiting: list[Pending] | None, room: int) -> list[Block]:
    title = "*Waiting for your approval*"
    if waiting is None:
        return [section(f"{title}\nThe requests {UNREADABLE}; their threads still have their buttons.")]
    if not waiting:
        return [section(f"{title}\nNothing waits for you.")]
    blocks = [section(f"{title} ({len(waiting)}, oldest first)")]
    for n, pending in enumerate(waiting):
        request = _request(pending)
        # Room kept for the line saying what is not shown.
        if len(blocks) + len(request) + 1 > room:
            more = len(waiting) - n
            said = f"{more} more not shown here (a Home tab holds {MAX_BLOCKS} blocks): each waits in its thread."
            return [*blocks, _context(said)]
        blocks += request
    return blocks


def _request(pending: Pending) -> list[Block]:
    """The request as its own message shows it, buttons and all (the same action ids: a click
    here goes the same way), its buttons' block named after it, and where it was asked."""
    blocks = [
        {**block, "block_id": f"{HOME_BLOCK}_request_{pending.id}"} if "block_id" in block else block
        for block in approval_blocks(pending)
    ]
    return [*blocks[:-1], _context(_where(pending)), blocks[-1]]


def _where(pending: Pending) -> str:
    place = pending.place
    if {"team", "channel", "thread_ts"} <= place.keys():
        thread = ThreadRef.of(place)
        return f"Asked in {_channel(thread.channel)}: " + own(f"<{thread.link}|open the thread>")
    return f"Asked {escape(redact_text(place.get('via', 'outside Slack')))}"


def _run_lines(runs: list[Run] | None) -> list[str] | None:
    if runs is None:
        return None
    return [_run_line(run) for run in runs]


def _run_line(run: Run) -> str:
    question = escape(_cut(redact_text(run.question), _LINE_CHARS)) or "(no text)"
    link = _thread_link(run.thread)
    return f"• {_date(run.at)} {question} → `{escape(run.stop_reason)}`" + (f" · {link}" if link else "")


def _thread_link(key: str) -> str:
    """A link to a Slack thread from its key (`slack:T:C:ts`); nothing for another front end's."""
    parts = key.split(":")
    if len(parts) != 4 or parts[0] != "slack" or not all(p.replace(".", "").isalnum() for p in parts[1:]):
        return ""
    thread = ThreadRef(team=parts[1], channel=parts[2], thread_ts=parts[3])
    return own(f"<{thread.link}|thread>")


def _usable_line(thing: Usable) -> str:
    about = escape(_cut(redact_text(thing.about), _LINE_CHARS))
    where = " (in " + ", ".join(_channel(c) for c in thing.only_in) + " only)" if thing.only_in else ""
    write = " · _changes things: asks for approval_" if thing.write else ""
    return f"• `{escape(thing.name)}` {about}{where}{write}"


def _health_lines(contents: HomeContents) -> list[str]:
    model = contents.health.model
    if model.state is ModelState.ok:
        said = "✅ Model: answers"
    elif model.state is ModelState.unverified:
        said = "✅ Model: reachable (its name is not verified: the server lists no models)"
    else:
        fix = f" {escape(model.fix)}" if model.fix else ""
        said = f"❌ Model: `{model.state.value}`: questions are not answered now; direct commands still work.{fix}"
    redis = (
        "✅ Redis: answers"
        if contents.health.redis
        else "❌ Redis: does not answer: nothing new can be queued, approvals wait"
    )
    return [said, redis]


def _list(title: str, lines: Sequence[str] | None, empty: str) -> Block:
    """A titled list in one section, cut to Slack's 3,000 characters with what was left out counted."""
    if lines is None:
        return section(f"*{title}*\nThey {UNREADABLE}.")
    if not lines:
        return section(f"*{title}*\n{empty}")
    head, kept = f"*{title}*", list[str]()
    for n, line in enumerate(lines):
        more = f"\n…and {len(lines) - n} more not shown (a section holds {SECTION_CHARS:,} characters)"
        if len("\n".join([head, *kept, line])) + len(more) > SECTION_CHARS:
            return section("\n".join([head, *kept]) + more)
        kept.append(line)
    return section("\n".join([head, *kept]))


def _channel(channel: str) -> str:
    """A channel as Slack shows it, when it is an id (a policy's may be anything typed)."""
    return own(f"<#{channel}>") if channel.isalnum() else escape(channel)


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _date(at: datetime) -> str:
    return own(f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{at:%Y-%m-%d %H:%M} UTC>")


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"
