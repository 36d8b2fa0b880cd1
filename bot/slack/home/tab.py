"""opsbot's App Home, off the ack path: the Messages tab's suggested prompts, the Home tab
published for whoever opens it, and Approve/Deny clicked there.

Slack sends `app_home_opened` with `tab`: `messages` (the person's DM with opsbot) or `home`
(docs.slack.dev/reference/events/app_home_opened). The prompts are set with
`assistant.threads.setSuggestedPrompts` on the DM channel without a `thread_ts`, as an agent
app must (with one, an agent app's call "will silently fail": the method's usage notes); the
Home tab with `views.publish` (docs.slack.dev/reference/methods/views.publish).

A click on the Home tab is decided by the approvals service exactly as a click on the request's
own message is (bot/slack/approval_requests.py `ClickView` shows the outcome in the request's
thread: its buttons replaced, an approved command's result posted, the model's conversation
going on); the person is told what it came to at the top of their refreshed Home tab.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ....config.policy import Policy, Principal
from ...approvals import Decision, Pending, Verdict
from ..approval_requests import ClickView, SlackRequests
from ..principals import Directory
from . import prompts
from .contents import Contents, where_asked
from .views import home_view, outsider_view

log = logging.getLogger("opsbot.slack")

NOT_WAITING = "This approval request is unknown or long expired; nothing was decided."


class HomeTab:
    def __init__(
        self,
        client: WebClient,
        *,
        contents: Contents,
        requests: SlackRequests,
        directory: Directory,
        policy: Policy,
        questions: Sequence[str],
        can_ask: bool,
        teams: frozenset[str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.contents = contents
        self.requests = requests
        self.directory = directory
        self.policy = policy
        self.questions = list(questions)
        self.can_ask = can_ask
        self.teams = teams  # its own workspace's and `slack.allowed_teams`: whom opsbot serves
        self.clock = clock
        self._no_prompts: set[str | None] = set()  # teams whose Slack refused suggested prompts
        self._lock = threading.Lock()

    def opened(self, tab: str | None, user: str, team: str | None, channel: str | None) -> None:
        """`app_home_opened`: prompts for the Messages tab, the view for the Home tab; for a person
        of a team opsbot does not serve, no prompts, and a Home tab that says so."""
        try:
            if team not in self.teams:
                if tab == "home":
                    self._send(user, outsider_view())
            elif tab == "messages" and channel:
                self.suggest(user, team, channel)
            elif tab == "home":
                self.publish(user, team)
        except Exception:  # noqa: BLE001 - run on an executor, whose futures nobody reads: logged, not lost
            log.exception("App Home of %s (%s tab) not shown", user, tab)

    def suggest(self, user: str, team: str | None, channel: str) -> None:
        """The prompts for `user` in their DM with opsbot, `channel`. A workspace whose Slack
        refuses the method (an app not declared as an agent, an older workspace) is asked once."""
        with self._lock:
            if team in self._no_prompts:
                return
        person = self.directory.principal(user, team, channel)
        offered = prompts.suggested(self.policy, self.questions, person, self.can_ask)
        if not offered:
            return
        try:
            self.client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, title=prompts.TITLE, prompts=[p.payload() for p in offered]
            )
        except SlackApiError as exc:
            with self._lock:
                self._no_prompts.add(team)
            log.warning("Slack refused suggested prompts (%s): not asked again for team %s", _error(exc), team)
        except (URLError, OSError) as exc:
            log.warning("suggested prompts for %s not set: %s", user, exc)

    def publish(self, user: str, team: str | None, notice: str = "") -> None:
        """`user`'s Home tab, as it is now; `notice`: what their last click on it came to."""
        person = self.directory.principal(user, team, None)
        self._send(user, home_view(self.contents.of(person, notice), self.clock()))

    def _send(self, user: str, view: dict[str, Any]) -> None:
        try:
            self.client.views_publish(user_id=user, view=view)
        except SlackApiError as exc:
            log.warning("Home tab of %s not published: %s", user, _error(exc))
        except (URLError, OSError) as exc:
            log.warning("Home tab of %s not published: %s", user, exc)

    def decide(self, request_id: str, approve: bool, user: str, team: str | None) -> None:
        """Approve or Deny clicked on `user`'s Home tab; then their tab again, saying what came of it.
        Raises ApprovalsUnavailable, RunStoreUnavailable (Redis does not answer)."""
        if team not in self.teams:
            self._send(user, outsider_view())
            return
        pending = self.requests.approvals.get(request_id)
        if pending is None:
            self.publish(user, team, NOT_WAITING)
            return
        clicker = where_asked(self.directory.principal(user, team, None), pending)
        # No message of the Home tab shows it: the rule alone says who may decide (`at` None).
        shown = InThread(self.requests, pending, clicker)
        decision = self.requests.approvals.decide(request_id, approve, clicker, shown)
        self.publish(user, team, decision.message)


class InThread:
    """What a click on the Home tab did, shown in the request's thread as its own buttons show
    it (ClickView); refusals are told on the Home tab, where the click was, not in the channel."""

    def __init__(self, requests: SlackRequests, pending: Pending, clicker: Principal) -> None:
        channel, _, ts = (pending.shown_at or "").partition("/")
        self.thread = ClickView(requests, channel, ts, clicker) if channel and ts else None

    def running(self, pending: Pending, by: Principal) -> None:
        if self.thread is not None:
            self.thread.running(pending, by)

    def decided(self, decision: Decision) -> None:
        if self.thread is not None and decision.verdict in (Verdict.approved, Verdict.denied, Verdict.expired):
            self.thread.decided(decision)


def _error(exc: SlackApiError) -> str:
    return str(exc.response.get("error") or exc)
