"""The Slack app manifest and Procfile promise what the code does: the events it listens to come
with the scopes they need, the slash command is the one registered, buttons can be clicked."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = json.loads((ROOT / "manifest.json").read_text())

# Each message event needs the history scope of its conversation type.
HISTORY_SCOPE = {
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
}


def test_every_subscribed_event_has_its_scope() -> None:
    events = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert "app_mention" in events and "app_mentions:read" in scopes
    assert {"message.channels", "message.im"} <= set(events), "thread replies and DMs need no mention"
    for event in events:
        if event in HISTORY_SCOPE:
            assert HISTORY_SCOPE[event] in scopes, event
    assert {"chat:write", "commands", "usergroups:read", "assistant:write"} <= scopes


def test_the_slash_command_and_buttons_are_the_ones_the_app_handles() -> None:
    from opsbot.bot.slack.listeners import commands

    [command] = MANIFEST["features"]["slash_commands"]
    assert command["command"] == "/ops"
    assert '"/ops"' in Path(commands.__file__).read_text()
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is True
    assert MANIFEST["settings"]["socket_mode_enabled"] is True
    for url in (command["url"], MANIFEST["settings"]["interactivity"]["request_url"]):
        assert url.endswith("/slack/events")


def test_the_procfile_runs_http_on_web_and_socket_mode_on_worker() -> None:
    lines = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line)
    assert lines["web"] == "opsbot serve --http"
    assert lines["worker"] == "opsbot serve"


def test_the_app_is_declared_an_agent_with_its_stop_event_and_home_tab() -> None:
    """Slack gives agent sessions (and their Stop button) only to apps declared as agents; without
    the `agent_session_stopped` subscription agents.sessions.setStatus warns and users get no
    Stop (docs.slack.dev/reference/events/agent_session_stopped)."""
    features = MANIFEST["features"]
    events = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    assert features["agent_view"]["agent_description"]
    assert features["app_home"]["home_tab_enabled"] is True
    assert features["app_home"]["messages_tab_enabled"] is True
    assert {"agent_session_stopped", "app_home_opened"} <= set(events)
    # Sessions are thread-based: chat:write manages them, assistant:write comes with the agent declaration.
    assert {"chat:write", "assistant:write"} <= set(MANIFEST["oauth_config"]["scopes"]["bot"])
