"""Draw the README's pictures from a real session: docs/images/chat.svg and docs/images/slack.svg.

A real `opsbot chat` session (bot/terminal/session.py, the live view) on the bundled sample,
re-dated as a first start renders it, asks one question of the scripted model server the tests
use (tests/fakes/model_server.py, real HTTP, the real `openai` client): the model reads
checkout's errors, payments' slow queries and payments' pool size, then answers. Everything the
session writes goes to a recording rich console, saved as SVG. The Slack picture is the same
reply as opsbot's Slack front end words it (bot/slack/blocks.py: the step lines, the answer, the
context line), drawn as a thread message; it is not a screenshot of Slack.

    .venv/bin/python docs/make_pictures.py [OUT_DIR]     # default: docs/images

tests/test_docs.py runs it into a temporary directory and checks the step lines are drawn.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests/fakes, run as a script

from rich.console import Console, Group  # noqa: E402
from rich.markdown import Markdown  # noqa: E402
from rich.panel import Panel  # noqa: E402
from rich.text import Text  # noqa: E402

from opsbot.bot.agent import Reply  # noqa: E402
from opsbot.bot.build import build_agent  # noqa: E402
from opsbot.bot.slack import blocks  # noqa: E402
from opsbot.bot.terminal.screen import Screen, say  # noqa: E402
from opsbot.bot.terminal.session import PROMPT, ChatSession  # noqa: E402
from opsbot.bot.version import VERSION  # noqa: E402
from opsbot.config.sample_env import prepare_sample  # noqa: E402
from opsbot.config.settings import SAMPLE_CONFIG, Settings  # noqa: E402
from tests.fakes.model_server import Call, ModelServer, tool_results  # noqa: E402
from tests.fakes.model_server import Reply as ModelReply  # noqa: E402

QUESTION = "why is checkout throwing 502s?"
WIDTH = 132
ANSWER = """\
**checkout's 502s come from payments timing out.**

- checkout logged 38 `ERROR`s in the last two hours, each a 502 with
  `upstream=payments:8443 error="upstream request timeout after 2000ms"` [1].
- In the same minutes payments logged slow ledger queries (`slow query 1840ms … no index on
  account_id`) [2], and its database pool holds only **5** connections [2: "db.primary.pool_size: 5"].

| check | found |
|---|---|
| checkout errors (2h) | 502s, upstream timeout to payments |
| payments warnings | slow `ledger_entries` queries |
| `db.primary.pool_size` | 5 |

Next: add the index on `ledger_entries.account_id`, or raise the pool while you do;
`run restart service=payments` needs an approver."""


def model(body: dict[str, Any]) -> ModelReply:
    """Three steps: checkout's errors; then payments' slow queries and pool size at once; then the answer."""
    done = len(tool_results(body))
    if done == 0:
        return ModelReply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR", "since": "2h"})])
    if done == 1:
        return ModelReply(
            calls=[
                Call("query_logs", {"service": "payments", "level": "WARN", "contains": "slow query", "limit": 5}),
                Call("read_config", {"name": "payments", "key": "db.primary.pool_size"}),
            ]
        )
    return ModelReply(content=ANSWER)


class Typed:
    """The person at the prompt: types the question, then leaves. What they type is drawn as the
    prompt shows it."""

    def __init__(self, out: Console, lines: list[str]) -> None:
        self.out = out
        self.lines = lines

    def line(self, prompt: str) -> str:
        if not self.lines:
            raise EOFError
        text = self.lines.pop(0)
        say(self.out, prompt + text, "bold")
        return text

    def confirm(self, question: str) -> bool:
        return False

    def leave(self) -> bool:
        return False


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def recorder() -> Console:
    # Not a terminal, so the live area (spinner, streamed answer) is not drawn between frames: the
    # picture is what stays on screen once the answer is printed.
    return Screen(file=io.StringIO(), record=True, width=WIDTH, highlight=False, markup=False, emoji=False)


def chat_session(out: Console, cache: Path) -> Reply:
    """One question in a real chat session; returns the reply the loop gave."""
    with ModelServer(model) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-picture", "OPSBOT_MODEL": "scripted-model"}
        with environment(env):
            config = prepare_sample(SAMPLE_CONFIG, VERSION, cache_home=cache)
            settings = Settings.load(config)
            agent = build_agent(settings)
            session = ChatSession(agent, settings.policy, thread="cli:picture", prompter=Typed(out, []), live=True)
            session.out = session.steps = out
            session.approvals.out = out
            session.banner(settings.model)
            replies: list[Reply] = []
            run = session._run

            def kept(*args: Any, **kwargs: Any) -> Reply:
                reply = run(*args, **kwargs)
                replies.append(reply)
                return reply

            session._run = kept  # type: ignore[method-assign]
            session.prompter = Typed(out, [QUESTION])
            session.loop()
            say(out, PROMPT + "exit", "bold")
    return replies[0]


def slack_picture(reply: Reply) -> Console:
    """The thread as opsbot's Slack front end words the reply: the question, the steps, the answer."""
    out = Console(file=io.StringIO(), record=True, width=WIDTH, highlight=False, markup=False, emoji=False)
    question = Text.assemble(("Dana  ", "bold"), ("@opsbot " + QUESTION))
    out.print(Panel(question, title="#incidents", title_align="left", border_style="bright_black"))
    lines = [line for step in reply.steps for line in blocks.step_lines(step)]
    # Slack shows the answer's markdown block rendered; so does the picture.
    body = Group(
        Text("\n".join(lines) + "\n", style="bright_black"),
        Markdown(reply.text),
        Text("\n" + blocks.context_line(reply) + "\n[ 👍 ]  [ 👎 ]", style="bright_black"),
    )
    out.print(Panel(body, title="opsbot  APP  · in thread", title_align="left", border_style="cyan"))
    return out


def main(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    terminal = recorder()
    with tempfile.TemporaryDirectory(prefix="opsbot-pictures-") as cache:
        reply = chat_session(terminal, Path(cache))
    chat = out_dir / "chat.svg"
    terminal.save_svg(str(chat), title="opsbot chat")
    slack = out_dir / "slack.svg"
    slack_picture(reply).save_svg(str(slack), title="opsbot in a Slack thread")
    return [chat, slack]


if __name__ == "__main__":
    for written in main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images"):
        print(f"wrote {written}")
