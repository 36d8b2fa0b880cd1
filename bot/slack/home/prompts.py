"""What opsbot's Messages tab suggests: up to four prompts made from the configuration, each
one the person may use there (their DM with opsbot is where a prompt is sent).

Slack takes `assistant.threads.setSuggestedPrompts` with "up to four suggested prompts", each a
`title` and the `message` sent when it is clicked (docs.slack.dev/reference/methods/
assistant.threads.setSuggestedPrompts). The prompts come from three places, taken in turn so
each is offered: the operator's `slack.common_questions`, the services (a question about one,
or its error lines when no model is configured), and the runbooks (`runbook show <id>`, a direct
command that needs no model).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import zip_longest

from pydantic import BaseModel, ConfigDict

from ....config.policy import Policy, Principal
from ....tools.redact import redact_text
from . import usable

MAX_PROMPTS = 4  # Slack shows up to four
# Slack documents no length for a prompt's title; a button's label (75) is what fits beside others.
TITLE_CHARS = 75
MESSAGE_CHARS = 300
TITLE = "Ask opsbot"


class Prompt(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    message: str

    def payload(self) -> dict[str, str]:
        return {"title": self.title, "message": self.message}


def suggested(policy: Policy, questions: Sequence[str], person: Principal, can_ask: bool) -> list[Prompt]:
    """The prompts for `person` (whose `channel` is their DM with opsbot), at most MAX_PROMPTS."""
    asked = [_prompt(q, q) for q in questions] if can_ask else []
    services = [_service(s.name, can_ask) for s in usable.services(policy, person) if not s.only_in]
    runbooks = [_prompt(f"Runbook {r.name}", f"runbook show {r.name}") for r in usable.runbooks(policy, person)]
    taken: list[Prompt] = []
    for prompt in _in_turn(asked, services, runbooks):
        if prompt.message not in {p.message for p in taken}:
            taken.append(prompt)
    return taken[:MAX_PROMPTS]


def _service(name: str, can_ask: bool) -> Prompt:
    if can_ask:
        return _prompt(f"What is wrong with {name}?", f"What is wrong with {name} right now? Check its recent errors.")
    return _prompt(f"{name}: recent errors", f"logs {name} ERROR")


def _prompt(title: str, message: str) -> Prompt:
    return Prompt(title=_cut(redact_text(title), TITLE_CHARS), message=_cut(redact_text(message), MESSAGE_CHARS))


def _in_turn(*pools: list[Prompt]) -> Iterator[Prompt]:
    for row in zip_longest(*pools):
        yield from (prompt for prompt in row if prompt is not None)


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"
