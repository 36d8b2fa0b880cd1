"""Everything opsbot shows in Slack, as Block Kit: steps, answers, command output, approvals.

Text that comes from the model, tools or people is escaped (`&`, `<`, `>`), so a log line saying
`<!channel>` cannot page a whole channel. opsbot's own Slack syntax (a mention, a date) is marked
with `own()`: on the way out every payload passes bot/slack/outbound.py, which keeps marked
syntax and makes everything else plain (links to unlisted hosts included), whatever built it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple, cast
from urllib.parse import quote

from slack_sdk.models.blocks import ContextActionsBlock, FeedbackButtonObject, FeedbackButtonsElement

from ...tools.base import CallStatus
from ...tools.inert import inert
from ...tools.redact import redact_text
from ...tools.text import cut_middle
from ..agent import Evidence, Reply, Step, Style, evidence_lines
from ..agent.prompts import answer_warning
from ..alerts import Alert
from ..approvals import Pending
from .alert_groups import GroupView, Member
from .outside import Outside, own

Block = dict[str, Any]

APPROVE = "opsbot_approve"
DENY = "opsbot_deny"
FEEDBACK = "opsbot_feedback"
Verdict = Literal["positive", "negative"]
POSITIVE: Verdict = "positive"
NEGATIVE: Verdict = "negative"
# An agent run's id (bot/agent/loop.py: 12 hex digits), as a feedback button's value carries it.
_FEEDBACK_VALUE = re.compile(rf"({POSITIVE}|{NEGATIVE}):([0-9a-f]{{12}})")
ANSWER_EVENT = "opsbot_answer"
STEPS_EVENT = "opsbot_steps"

# Slack's limits (Block Kit reference, chat.postMessage): 3,000 characters a section text; 12,000
# for the markdown blocks of one message, and for the markdown text of one stream call; a message's
# `text` past 40,000 is cut. Answer text is measured as it is sent (`_shown_chars`), with 1,000 to
# spare below 12,000 for links to listed hosts, which keep their whole URL.
_SECTION_CHARS = 2900
MARKDOWN_CHARS = 11_000
# An answer needing more messages than this is attached as a file instead, its beginning shown in
# its message (HEAD_CHARS): Slack takes about a post a second in a channel, and a thread of twenty
# messages is no way to read one answer.
ANSWER_MESSAGES = 4
HEAD_CHARS = 3_000
ANSWER_PART_EVENT = "opsbot_answer_part"  # a message of an answer too long for one, but its last

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
    text = "\n".join(lines[-40:]) or ("_none: no tool was needed_" if done else "_asking the model…_")
    return Content("opsbot steps", [section(f"{head}\n{text}")])


def context_line(reply: Reply) -> str:
    usage = reply.usage
    tokens = usage.prompt_tokens + usage.completion_tokens
    reason = "" if reply.stop_reason == "answered" else f"{reply.stop_reason.value} · "
    return (
        f"{reason}{len(reply.steps)} step(s) · {usage.model_calls} model call(s) · {tokens:,} tokens · "
        f"{reply.duration_s:.1f} s"
    )


class Attachment(NamedTuple):
    """A file in a thread, found again by its name: an answer too long for messages (text), or a
    chart (a PNG, with the alt text that says what it shows)."""

    name: str
    title: str
    content: str | bytes
    alt_text: str = ""


class AnswerMessages(NamedTuple):
    """An answer as it is posted: its messages in order, the last its own (its footer and marker),
    and, for an answer too long for them, the file holding all of it (shared before the last).
    `key` tells this answer's messages from those of another run of the same job."""

    messages: list[Content]
    key: str
    attachment: Attachment | None = None


def answer_messages(reply: Reply, answer_id: str) -> AnswerMessages:
    """`reply` in one message if it fits, else in up to ANSWER_MESSAGES, else attached as a file.
    Nothing is left out unsaid: every message says which part it is, or what the file holds."""
    key = hashlib.sha256(reply.text.encode()).hexdigest()[:10]
    pieces = list(itertools.islice(_pieces(reply.text, MARKDOWN_CHARS), ANSWER_MESSAGES + 1))
    if len(pieces) <= 1:
        blocks = [_markdown(reply.text), *answer_footer(reply)]
        return AnswerMessages([Content(_fallback(reply.text, reply), blocks)], key)
    if len(pieces) <= ANSWER_MESSAGES:
        count = len(pieces)
        going_on = [f"Part {n} of {count} of this answer: it goes on below." for n in range(1, count)]
        parts = [
            Content(escape(piece), [_markdown(piece), _context(note)])
            for piece, note in zip(pieces[:-1], going_on, strict=True)
        ]
        last = [_markdown(pieces[-1]), _context(f"Part {count} of {count}."), *answer_footer(reply)]
        return AnswerMessages([*parts, Content(_fallback(pieces[-1], reply), last)], key)
    name = f"opsbot-answer-{re.sub(r'[^A-Za-z0-9_-]', '-', answer_id)}-{key}.txt"
    # Inert, as every text opsbot shows: a file may well be read with `cat` in a terminal.
    attachment = Attachment(name, f"opsbot's answer ({len(reply.text):,} characters)", inert(reply.text))
    head = next(_pieces(reply.text, HEAD_CHARS))
    note = (
        f"This answer is {len(reply.text):,} characters long, more than {ANSWER_MESSAGES} messages hold: "
        f"all of it is in the file {name} above; its first {len(head):,} characters are shown here."
    )
    return AnswerMessages([_head_message(reply, head, note)], key, attachment)


def unattached_message(reply: Reply, why: str) -> Content:
    """The message of an answer too long for messages whose file could not be shared: its beginning, and why."""
    head = next(_pieces(reply.text, HEAD_CHARS))
    note = (
        f"This answer is {len(reply.text):,} characters long; only its first {len(head):,} are shown here: "
        f"the whole of it could not be attached as a file ({why})."
    )
    return _head_message(reply, head, note)


def _head_message(reply: Reply, head: str, note: str) -> Content:
    blocks = [_markdown(head), _context(escape(note)), *answer_footer(reply)]
    return Content(_fallback(head, reply), blocks)


def _fallback(text: str, reply: Reply) -> str:
    """A message's plain text, for notifications: its part of the answer, and what the run took."""
    return escape(f"{text}\n({context_line(reply)})")


def answer_footer(reply: Reply) -> list[Block]:
    """What follows the answer's text: a warning when nothing backs it, what the check found
    (flagged statements, footnotes pointing at the steps' lines, what was not looked at), what it
    took, the feedback buttons, which name the reply's run (alone, they end a message whose answer
    text was streamed)."""
    warning = answer_warning(reply)
    marks = [_context(f":warning: {escape(warning)}")] if warning else []
    return [
        *marks,
        *evidence_blocks(reply.evidence),
        _context(escape(context_line(reply))),
        *feedback_blocks(reply.run_id),
    ]


def evidence_blocks(evidence: Evidence | None) -> list[Block]:
    """What the check of the answer found, a context block for what warns and one for the footnotes."""
    said = evidence_lines(evidence, claims=False) if evidence is not None else []
    warns = [escape(s.line) for s in said if s.warns]
    notes = [escape(s.line) for s in said if not s.warns]
    return [_context(_cut("\n".join(lines), _SECTION_CHARS)) for lines in (warns, notes) if lines]


class Feedback(NamedTuple):
    """What a click on an answer's feedback buttons says: the verdict, on which run's answer."""

    verdict: Verdict
    run: str


def feedback_blocks(run: str) -> list[Block]:
    """Slack's native feedback buttons, which must sit in a `context_actions` block
    (docs.slack.dev/reference/block-kit/blocks/context-actions-block,
    docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element). A click sends a
    `block_actions` payload whose action is `{"type": "feedback_buttons", "action_id", "block_id",
    "value", "text", "action_ts"}` with the clicked button's value (docs.slack.dev/reference/
    interaction-payloads/block_actions-payload; bolt-js's `FeedbackButtonsAction`): so each value
    names the verdict and the answer's run, `negative:5d1c0a9b3e2f` (`feedback_of` reads it back).
    The block has no block_id: Slack makes one per message, as it asks. Slack's own sample agent
    builds them alike (slack-samples/bolt-python-support-agent, listeners/views/feedback_builder.py)."""
    buttons = FeedbackButtonsElement(
        action_id=FEEDBACK,
        positive_button=FeedbackButtonObject(
            text="Helpful", value=f"{POSITIVE}:{run}", accessibility_label="This answer helped"
        ),
        negative_button=FeedbackButtonObject(
            text="Not helpful", value=f"{NEGATIVE}:{run}", accessibility_label="This answer did not help"
        ),
    )
    return [ContextActionsBlock(elements=[buttons]).to_dict()]


def feedback_of(value: str) -> Feedback | None:
    """The verdict and run a feedback button's value names; None for a value opsbot never wrote."""
    found = _FEEDBACK_VALUE.fullmatch(value)
    return Feedback(cast(Verdict, found[1]), found[2]) if found else None


def output_blocks(title: str, text: str, ok: bool, max_chars: int, note: str = "") -> list[Block]:
    """Command output in a code block, cut in the middle with a note when long; `note` below it."""
    mark = "" if ok else "✗ "
    # Cut after escaping: `&lt;` is longer than `<`, and the section must keep its tail and fence.
    shown = cut_middle(escape(text), max_chars)
    cut = (
        [_context(f"Output cut to {max_chars:,} characters (of {len(text):,}), middle left out.")] if shown.cut else []
    )
    said = [_context(escape(note))] if note else []
    return [section(f"{mark}{_cut(escape(title), 100)}\n```{shown.text}```"), *cut, *said]


def approval_blocks(pending: Pending) -> list[Block]:
    """A request with Approve/Deny buttons: the exact argv (the silence, or the runbook's question), who asked,
    why, and until when. The button's value is the request id, all a click needs."""
    asked = mention(pending.requested_by.user) if pending.requested_by else "someone"
    if pending.command is not None and pending.command.silence is not None:
        what = (
            f":warning: *Approval needed* – {escape(pending.command.description)} mutes alerts.\n"
            f"*Will create:* `{escape(pending.argv_shown)}`\n*Asked by* {asked}: {escape(_cut(pending.why, 500))}"
        )
        check = ("Create this silence?", f"`{escape(pending.argv_shown)}` will be created.", "Create it")
    elif pending.command is not None and pending.command.mcp is not None:
        what = (
            f":warning: *Approval needed* – {escape(pending.command.description)} changes things.\n"
            f"*Will call:* `{escape(pending.argv_shown)}`\n*Asked by* {asked}: {escape(_cut(pending.why, 500))}"
        )
        check = ("Make this call?", f"`{escape(_cut(pending.argv_shown, 200))}` will be called.", "Call it")
    elif pending.command is not None:
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


# Text as outbound.py sends it with no listed link domain: every link shown as where it points,
# which is as long as it gets but for a listed link's query string.
_PLAIN = Outside()
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# What a piece keeps free for the fence that closes a code block cut in two.
_FENCE_ROOM = 40


def _shown_chars(text: str) -> int:
    """How long `text` is in a Slack payload: escaped here, then made plain on the way out."""
    escaped = escape(text)
    return max(len(escaped), len(_PLAIN.text(escaped)))


def _pieces(text: str, chars: int) -> Iterator[str]:
    """`text` in order, in pieces each `chars` or shorter in a payload (`_shown_chars`): cut at line
    ends, a line too long for one piece at spaces, a word too long anywhere. A code block cut in two
    is closed at the end of one piece and opened again at the start of the next, so both show it as
    code. Joined, the pieces are `text` but for those fences."""
    piece, size, fence = "", 0, ""  # `fence`: the opening line of the code block `piece` is in
    for line in _units(text, chars - 2 * _FENCE_ROOM):
        length = _shown_chars(line)
        if piece and size + length > chars - _FENCE_ROOM:
            yield _closed(piece, fence)
            piece = f"{fence}\n" if fence else ""
            size = len(piece)
        piece, size = piece + line, size + length
        fence = _fence_after(line, fence)
    if piece or not text:
        yield piece


def _units(text: str, chars: int) -> Iterator[str]:
    """`text` in the units it is cut between: its lines, each with its line end; the words of one
    too long for `chars`, and runs of characters of a word too long."""
    for line in text.splitlines(keepends=True):
        if _shown_chars(line) <= chars:
            yield line
            continue
        for word in re.findall(r"\S+\s*|\s+", line):
            yield from [word] if _shown_chars(word) <= chars else _cut_word(word, chars)


def _cut_word(word: str, chars: int) -> list[str]:
    """`word` in runs of characters that each fit `chars`."""
    runs = []
    while _shown_chars(word) > chars:
        end = len(word)
        while _shown_chars(word[:end]) > chars:
            end = max(1, end * chars // _shown_chars(word[:end]) - 1)
        runs.append(word[:end])
        word = word[end:]
    return [*runs, word]


def _fence_after(line: str, fence: str) -> str:
    """The code block open after `line`, given the one open before it ("" for none)."""
    marker = _marker(line)
    if not marker:
        return fence
    if not fence:
        return line.rstrip("\n")[:_FENCE_ROOM]
    opened = _marker(fence)
    closes = line.strip() == marker and marker[0] == opened[0] and len(marker) >= len(opened)
    return "" if closes else fence


def _marker(line: str) -> str:
    """The fence a line opens or closes a code block with (```, ~~~), or ""."""
    match = _FENCE.match(line)
    return match.group(1) if match else ""


def _closed(piece: str, fence: str) -> str:
    """`piece`, with the code block it ends in closed."""
    if not fence:
        return piece
    ended = piece if piece.endswith("\n") else piece + "\n"
    return f"{ended}{_marker(fence)}\n"


def _markdown(text: str) -> Block:
    return {"type": "markdown", "text": escape(text)}


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


def _person(who: str) -> str:
    """An approver as the audit trail names them (`slack:U123`): mentioned when a Slack user."""
    platform, _, user = who.partition(":")
    return mention(user) if platform == "slack" else escape(who)


_ARCHIVES = "https://slack.com/archives/"  # what ThreadRef.link writes: a record's link, when opsbot made it
# Recalled incidents in a thread (after an answer, under an alert): their text escaped, channels,
# approvers and thread links as Slack shows them.
RECALLED = Style(
    text=escape,
    channel=lambda channel: own(f"<#{channel}>") if channel.isalnum() else escape(channel),
    person=_person,
    link=lambda url: own(f"<{url}|thread>") if url.startswith(_ARCHIVES) else escape(url),
)


# opsbot's own Stop button, on the progress message of a run in a workspace without agent sessions
# (where there are sessions, Slack shows its own while the session is `processing`).
STOP = "opsbot_stop"


def with_stop(content: Content, thread_ts: str) -> Content:
    """A steps message with the Stop button below its lines; its value is the run's thread."""
    stop = {**button("Stop", STOP, thread_ts), "style": "danger"}
    return Content(content.text, [*content.blocks, {"type": "actions", "block_id": STOP, "elements": [stop]}])
