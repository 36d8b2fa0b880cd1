"""Everything opsbot shows in Slack, as Block Kit: steps, answers, command output, approvals.

Text that comes from the model, tools or people is escaped (`&`, `<`, `>`), so a log line saying
`<!channel>` cannot page a whole channel, and no text here becomes a link or a mention unless
opsbot itself wrote it.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from bot.prompts import UNCHECKED
from bot.reply import Reply, Step
from bot.slack.jobs import PendingApproval
from tools.base import CallStatus
from tools.text import cut_middle

Block = dict[str, Any]

APPROVE = "opsbot_approve"
DENY = "opsbot_deny"
FEEDBACK = "opsbot_feedback"
ANSWER_EVENT = "opsbot_answer"

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
    return f"<@{user}>" if user.isalnum() else escape(user)


def status_text(tool: str, args: Any) -> str:
    """The thread status while a tool runs, e.g. "querying checkout logs…"."""
    template = _TOOL_DOING.get(tool, f"using {tool}")
    values = args if isinstance(args, dict) else {}
    try:
        return template.format(**{k: str(v) for k, v in values.items()}) + "…"
    except KeyError:
        return f"using {tool}…"


def step_lines(step: Step) -> list[str]:
    """One line per call: `✓ 1 query_logs service=checkout level=ERROR → ok (120 ms)`."""
    lines = []
    for call in step.calls:
        mark = "✓" if call.status is CallStatus.ok else "✗"
        args = _args(call.args)
        error = f" – {_cut(call.error, 200)}" if call.error else ""
        lines.append(
            f"{mark} {step.n}. `{escape(call.tool)}` {escape(args)} → {call.status} "
            f"({call.duration_ms:.0f} ms){escape(error)}"
        )
    if step.note:
        lines.append(f"! {step.n}. {escape(step.note)}")
    return lines


def steps_message(lines: list[str], done: bool) -> tuple[str, list[Block]]:
    head = "*Steps*" if done else "*Working on it…*"
    text = "\n".join(lines[-40:]) or "_asking the model…_"
    return "opsbot steps", [section(f"{head}\n{text}")]


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


def approval_blocks(pending: PendingApproval) -> list[Block]:
    request = pending.request
    asked = mention(request.requested_by.user) if request.requested_by else "someone"
    params = ", ".join(f"{k}={v}" for k, v in request.params.items()) or "no parameters"
    confirm = {
        "title": {"type": "plain_text", "text": "Run this command?"},
        # Slack refuses a confirm text over 300 characters; the message above shows the whole argv.
        "text": {
            "type": "mrkdwn",
            "text": _cut(f"`{escape(shlex.join(request.argv))}` will run on the opsbot host.", 280),
        },
        "confirm": {"type": "plain_text", "text": "Run it"},
        "deny": {"type": "plain_text", "text": "Cancel"},
        "style": "danger",
    }
    return [
        section(
            f":warning: *Approval needed* – `{escape(request.command)}` ({escape(request.description)}) "
            "changes things.\n"
            f"*Will run:* `{escape(shlex.join(request.argv))}`\n*Parameters:* {escape(params)}\n"
            f"*Asked by* {asked}: {escape(_cut(pending.why, 500))}"
        ),
        _context(
            f"Request {request.id} · expires <!date^{int(request.expires_at.timestamp())}^{{time}}|at "
            f"{request.expires_at:%H:%M} UTC> · only an allowed approver may decide"
        ),
        {
            "type": "actions",
            "block_id": "opsbot_approval",
            "elements": [
                {**button("Approve", APPROVE, request.id), "style": "primary", "confirm": confirm},
                {**button("Deny", DENY, request.id), "style": "danger"},
            ],
        },
    ]


def decision_blocks(pending: PendingApproval, decision: str) -> list[Block]:
    """The approval message once decided: the same facts, the buttons replaced by the decision."""
    request = pending.request
    return [
        section(f"*{escape(request.command)}*: `{escape(shlex.join(request.argv))}`"),
        _context(decision),
    ]


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
