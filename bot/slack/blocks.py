"""Everything opsbot shows in Slack, as Block Kit: steps, answers, command output, approvals.

Text that comes from the model, tools or people is escaped (`&`, `<`, `>`), so a log line saying
`<!channel>` cannot page a whole channel. opsbot's own Slack syntax (a mention, a date) is marked
with `own()`: on the way out every payload passes bot/slack/outbound.py, which keeps marked
syntax and makes everything else plain (links to unlisted hosts included), whatever built it.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import quote

from ...tools.base import CallStatus
from ...tools.redact import redact_text
from ...tools.text import cut_middle
from ..agent import Reply, Step
from ..agent.prompts import UNCHECKED
from ..alerts import Alert
from ..approvals import Pending
from .alert_groups import GroupView, Member
from .outside import own

Block = dict[str, Any]

APPROVE = "opsbot_approve"
DENY = "opsbot_deny"
FEEDBACK = "opsbot_feedback"
ANSWER_EVENT = "opsbot_answer"
STEPS_EVENT = "opsbot_steps"

# Slack's limits: 3000 characters per section text, 12000 for markdown blocks in one message
# (and for the markdown text of one stream call).
_SECTION_CHARS = 2900
MARKDOWN_CHARS = 11_000

# Said in a stream when the text streamed as the answer was the model's thinking (it is taken out
# of the message when the answer is complete).
THINKING_NOTE = "_(the lines above were the model's thinking, not its answer)_"

_TOOL_DOING = {
    "query_logs": "querying {service} logs",
    "run_command": "running {command}",
    "read_config": "reading the {name} config",
    "list_services": "listing what can be looked at",
}


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mention(user: str) -> str:
    """A mention of a user id opsbot got from Slack itself (never from text)."""
    return own(f"<@{user}>") if user.isalnum() else escape(user)


def status_text(tool: str, args: Any) -> str:
    """The thread status while a tool runs, e.g. "querying checkout logs…"."""
    template = _TOOL_DOING.get(tool, f"using {tool}")
    values = args if isinstance(args, dict) else {}
    try:
        return template.format(**{k: str(v) for k, v in values.items()}) + "…"
    except KeyError:
        return f"using {tool}…"


def preamble_lines(text: str | None) -> list[str]:
    """What the model wrote beside a step's calls (`Step.preamble`), as the step's first lines."""
    return [escape(line) for line in (text or "").splitlines()]


def step_lines(step: Step) -> list[str]:
    """One line per call: `✓ 1. query_logs service=checkout level=ERROR → ok: 37 matching lines (120 ms)`."""
    lines = []
    for call in step.calls:
        mark = "✓" if call.status is CallStatus.ok else "✗"
        args = _args(call.args)
        outcome = escape(call.outcome)
        lines.append(f"{mark} {step.n}. `{escape(call.tool)}` {escape(args)} → {outcome} ({call.duration_ms:.0f} ms)")
    if step.note:
        lines.append(f"! {step.n}. {escape(step.note)}")
    return lines


class Content(NamedTuple):
    """A message as posted: the text notifications show, and the blocks the message shows."""

    text: str
    blocks: list[Block]


def steps_message(lines: list[str], done: bool) -> Content:
    head = "*Steps*" if done else "*Working on it…*"
    text = "\n".join(lines[-40:]) or "_asking the model…_"
    return Content("opsbot steps", [section(f"{head}\n{text}")])


def context_line(reply: Reply) -> str:
    usage = reply.usage
    tokens = usage.prompt_tokens + usage.completion_tokens
    reason = "" if reply.stop_reason == "answered" else f"{reply.stop_reason.value} · "
    return (
        f"{reason}{len(reply.steps)} step(s) · {usage.model_calls} model call(s) · {tokens:,} tokens · "
        f"{reply.duration_s:.1f} s"
    )


def answer_blocks(reply: Reply, answer_id: str) -> list[Block]:
    return [{"type": "markdown", "text": _cut(escape(reply.text), MARKDOWN_CHARS)}, *answer_footer(reply, answer_id)]


def answer_footer(reply: Reply, answer_id: str) -> list[Block]:
    """What follows the answer's text: whether it was checked, what it took, the feedback buttons
    (alone, they end a message whose answer text was streamed)."""
    unchecked = [] if reply.checked else [_context(f":warning: {escape(UNCHECKED)}")]
    return [*unchecked, _context(escape(context_line(reply))), *feedback_blocks(answer_id)]


def feedback_blocks(answer_id: str) -> list[Block]:
    return [
        {
            "type": "actions",
            "block_id": "opsbot_feedback",
            "elements": [
                button("👍 Helpful", f"{FEEDBACK}_good", answer_id),
                button("👎 Not helpful", f"{FEEDBACK}_bad", answer_id),
            ],
        }
    ]


def output_blocks(title: str, text: str, ok: bool, max_chars: int) -> list[Block]:
    """Command output in a code block, cut in the middle with a note when long."""
    mark = "" if ok else "✗ "
    # Cut after escaping: `&lt;` is longer than `<`, and the section must keep its tail and fence.
    shown = cut_middle(escape(text), max_chars)
    note = (
        [_context(f"Output cut to {max_chars:,} characters (of {len(text):,}), middle left out.")] if shown.cut else []
    )
    return [section(f"{mark}{_cut(escape(title), 100)}\n```{shown.text}```"), *note]


def approval_blocks(pending: Pending) -> list[Block]:
    """A request with Approve/Deny buttons: the exact argv (or the runbook's question), who asked,
    why, and until when. The button's value is the request id, all a click needs."""
    asked = mention(pending.requested_by.user) if pending.requested_by else "someone"
    if pending.command is not None:
        request = pending.command
        params = ", ".join(f"{k}={v}" for k, v in request.params.items()) or "no parameters"
        what = (
            f":warning: *Approval needed* – `{escape(request.command)}` ({escape(request.description)}) "
            "changes things.\n"
            f"*Will run:* `{escape(pending.argv_shown)}`\n*Parameters:* {escape(redact_text(params))}\n"
            f"*Asked by* {asked}: {escape(_cut(pending.why, 500))}"
        )
        # Slack refuses a confirm text over 300 characters; the message above shows the whole argv.
        check = ("Run this command?", f"`{escape(pending.argv_shown)}` will run on the opsbot host.", "Run it")
    else:
        assert pending.gate is not None
        what = (
            f":warning: *Approval needed* – {escape(pending.why)}:\n{escape(pending.gate.text)}\n*Started by* {asked}"
        )
        check = ("Go on?", escape(_cut(pending.gate.text, 200)), "Approve")
    confirm = {
        "title": {"type": "plain_text", "text": check[0]},
        "text": {"type": "mrkdwn", "text": _cut(check[1], 280)},
        "confirm": {"type": "plain_text", "text": check[2]},
        "deny": {"type": "plain_text", "text": "Cancel"},
        "style": "danger",
    }
    return [
        section(what),
        _context(
            f"Request {pending.id} · expires "
            + own(f"<!date^{int(pending.expires_at.timestamp())}^{{time}}|at {pending.expires_at:%H:%M} UTC>")
            + " · only an allowed approver may decide"
        ),
        {
            "type": "actions",
            "block_id": "opsbot_approval",
            "elements": [
                {**button("Approve", APPROVE, pending.id), "style": "primary", "confirm": confirm},
                {**button("Deny", DENY, pending.id), "style": "danger"},
            ],
        },
    ]


def decision_blocks(pending: Pending | None, decision: str) -> list[Block]:
    """The request once decided: the same facts, the buttons replaced by the decision."""
    if pending is None:
        return [_context(decision)]
    return [section(escape(pending.what)), _context(decision)]


# A group's message lists this many of its alerts by what sets them apart, then "and N more".
LISTED_ALERTS = 10


def group_blocks(view: GroupView) -> list[Block]:
    """An alert group as posted in its channel: its first alert's title, annotations and link, the
    labels all its alerts share, each alert by the labels that set it apart (the first
    LISTED_ALERTS), the runbook runs they started and the alerts that started none; all redacted,
    the link encoded."""
    first, members = view.first, view.members
    lines = [f"🚨 *{escape(redact_text(first.title))}* ({first.source}, {_group_state(members, first)})"]
    shared = _shared_labels([m.labels for m in members] or [first.labels])
    lines.append(f"*Labels:* {escape(redact_text(_pairs(shared)))}")
    if len(members) > 1:
        lines.append(f"*Alerts ({len(members)}):*")
        for member in members[:LISTED_ALERTS]:
            apart = {k: v for k, v in member.labels.items() if k not in shared}
            lines.append(f"• {escape(redact_text(_pairs(apart) or '(same labels)'))} ({member.status})")
        if len(members) > LISTED_ALERTS:
            lines.append(f"and {len(members) - LISTED_ALERTS} more")
    lines += [f"*{escape(k)}:* {escape(redact_text(v))}" for k, v in sorted(first.annotations.items())]
    if first.url:
        # Slack's link syntax ends at `|` or `>`: encoded, a URL cannot relabel itself or add a mention.
        # Not `own()`: the URL is the alert's, so it stays a link only to a host in slack.link_domains.
        lines.append(f"<{quote(first.url, safe=':/?#[]@!$&()*+,;=%~.-_')}|Open in {first.source}>")
    if first.notes:
        lines.append(f"_{escape('; '.join(first.notes))}_")
    for run in view.runs:
        params = escape(redact_text(_pairs(run.params)))
        lines.append(f"*Runbook* `{escape(run.runbook)}` ({params}) for {run.alerts} alert(s)")
    reasons: dict[str, int] = {}
    for why in view.not_run.values():
        reasons[why] = reasons.get(why, 0) + 1
    lines += [f"*Not run* for {count} alert(s): {escape(why)}" for why, count in sorted(reasons.items())]
    return [section("\n".join(lines))]


def _group_state(members: list[Member], first: Alert) -> str:
    if len(members) <= 1:
        return members[0].status if members else first.status
    firing = sum(m.status == "firing" for m in members)
    return f"{firing} firing, {len(members) - firing} resolved" if firing else f"all {len(members)} resolved"


def _shared_labels(labels: list[dict[str, str]]) -> dict[str, str]:
    """The labels every alert has with the same value."""
    shared = dict(labels[0])
    for other in labels[1:]:
        shared = {k: v for k, v in shared.items() if other.get(k) == v}
    return shared


def _pairs(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def step_blocks(text: str, output: str, max_chars: int) -> list[Block]:
    """A runbook step as it finished: its line, and what it found in a code block, cut in the middle."""
    blocks = [section(escape(text))]
    if output:
        blocks.append(section(f"```{cut_middle(escape(output), max_chars).text}```"))
    return blocks


def button(text: str, action_id: str, value: str) -> Block:
    return {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id, "value": value}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cut(text, _SECTION_CHARS)}}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _args(args: Any) -> str:
    if isinstance(args, dict):
        return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in args.items())
    return str(args)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
