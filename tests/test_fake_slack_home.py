"""The fake Slack's App Home methods answer the real `slack_sdk.WebClient` as Slack documents
them: views.publish (docs.slack.dev/reference/methods/views.publish) and
assistant.threads.setSuggestedPrompts (docs.slack.dev/reference/methods/
assistant.threads.setSuggestedPrompts). Tests of the Home tab trust them, so they are pinned here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import SectionBlock
from slack_sdk.models.views import View

from tests.fakes.slack_api import SlackApi
from tests.test_fake_slack import TOKEN
from tests.test_fake_slack import client as client  # noqa: F401 - a fixture, given this file's `slack`


@pytest.fixture
def slack() -> Iterator[SlackApi]:
    with SlackApi(token=TOKEN) as fake:
        yield fake


def home(blocks: int = 1, text: str = "hello") -> dict[str, Any]:
    return {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}] * blocks}


def error_of(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        call()
    return str(raised.value.response["error"])


def test_views_publish_stores_the_home_view_and_answers_it(slack: SlackApi, client: WebClient) -> None:
    view = View(type="home", blocks=[SectionBlock(text="hello")])  # the SDK's model, sent as JSON
    first = client.views_publish(user_id="U1", view=view)["view"]
    assert (first["type"], first["team_id"], first["blocks"][0]["text"]["text"]) == ("home", "T1", "hello")
    again = client.views_publish(user_id="U1", view=home(text="again"), hash=first["hash"])["view"]
    assert again["id"] == first["id"] and again["hash"] != first["hash"], "one Home view a person, its hash new"
    assert [v["blocks"][0]["text"]["text"] for v in slack.home_views("U1")] == ["hello", "again"]
    assert slack.home_views("U2") == []


def test_views_publish_refuses_what_slack_refuses(slack: SlackApi, client: WebClient) -> None:
    assert error_of(lambda: client.views_publish(user_id="U1", view=home(blocks=101))) == "invalid_arguments"
    assert error_of(lambda: client.views_publish(user_id="U1", view=home(text="x" * 3001))) == "invalid_arguments"
    assert error_of(lambda: client.views_publish(user_id="U1", view={"type": "modal", "blocks": []})) == (
        "invalid_arguments"
    )
    client.views_publish(user_id="U1", view=home(blocks=100))
    assert error_of(lambda: client.views_publish(user_id="U1", view=home(), hash="stale")) == "hash_conflict"
    slack.home_tab_enabled = False
    assert error_of(lambda: client.views_publish(user_id="U1", view=home())) == "not_enabled"
    assert len(slack.home_views("U1")) == 1


def test_suggested_prompts_are_set_on_a_channel_and_an_agent_apps_thread_ts_sets_nothing(
    slack: SlackApi, client: WebClient
) -> None:
    prompts = [{"title": "Errors", "message": "logs checkout ERROR"}]
    assert client.assistant_threads_setSuggestedPrompts(channel_id="D1", title="Ask", prompts=prompts)["ok"]
    assert slack.suggested_prompts("D1") == [{"prompts": prompts, "title": "Ask"}]
    assert client.assistant_threads_setSuggestedPrompts(channel_id="D2", thread_ts="1.1", prompts=prompts)["ok"]
    assert slack.suggested_prompts("D2") == [], "an agent app's call with thread_ts silently fails"
    five = prompts * 5
    assert error_of(lambda: client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=five)) == (
        "invalid_arguments"
    )
    untitled = [{"message": "x"}]
    assert error_of(lambda: client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=untitled)) == (
        "invalid_arguments"
    )
