"""A caller's writes put to the policy's approvers in Slack: each request in a thread of its own in
`mcp_serve.approvals_channel`, with the same Approve/Deny buttons as the model's requests
(bot/slack/approval_requests.py), stored in the Redis `opsbot serve` uses. The clicks reach that
`opsbot serve` process, whose approvals service decides, runs the approved write and posts its
result in the thread; this process only asks, and answers `approval_status` from the store."""

from __future__ import annotations

from urllib.error import URLError

from slack_sdk.errors import SlackApiError

from ...config.settings import Settings
from ...tools.commands import ApprovalRequest
from ..approvals import Approvals, Pending, RedisApprovalStore
from ..slack.app import configure_client
from ..slack.approval_requests import SlackRequests
from ..slack.blocks import escape
from ..slack.jobs import ThreadRef
from ..slack.outbound import GuardedClient, Outbound
from ..slack.posting import PostFailed, post_once
from ..telemetry.audit import Audit
from .desk import Desk, ShowFailed

ROOT_TEXT = "An agent asks for a change through opsbot mcp-serve; the request is in this thread."


class DeskError(Exception):
    """The approval channel cannot be used as configured."""


class SlackShowing:
    def __init__(self, requests: SlackRequests, team: str, channel: str) -> None:
        self.requests = requests
        self.team = team
        self.channel = channel
        self.where = f"in Slack channel {channel}"

    def place(self, request: ApprovalRequest) -> dict[str, str]:
        try:
            ts = post_once(self.requests.client, self.channel, None, f"{request.id}:root", text=escape(ROOT_TEXT))
        except PostFailed as exc:
            raise ShowFailed(f"Slack refused the request's message ({exc.error})") from exc
        return ThreadRef(team=self.team, channel=self.channel, thread_ts=ts).place()

    def show(self, pending: Pending) -> None:
        try:
            self.requests.post(ThreadRef.of(pending.place), pending)
        except PostFailed as exc:
            raise ShowFailed(f"Slack refused the request's message ({exc.error})") from exc


def slack_desk(settings: Settings, audit: Audit) -> Desk:
    """Raises DeskError when SLACK_BOT_TOKEN or REDIS_URL is missing or Slack refuses the token."""
    channel = settings.mcp_serve.approvals_channel
    assert channel is not None
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    if not token or not settings.redis_url:
        raise DeskError(
            "mcp_serve.approvals_channel posts writes to Slack for approval: it needs SLACK_BOT_TOKEN and "
            "REDIS_URL, the same as `opsbot serve`, which takes the clicks"
        )
    client = configure_client(GuardedClient(token=token), settings)
    assert isinstance(client, GuardedClient)
    client.outbound = Outbound(settings.slack.link_domains)
    try:
        team = client.auth_test()["team_id"]
    except SlackApiError as exc:
        raise DeskError(f"SLACK_BOT_TOKEN was refused by Slack ({exc.response.get('error')})") from exc
    except (URLError, OSError) as exc:
        raise DeskError(f"cannot reach the Slack API at {client.base_url} ({exc}); check SLACK_API_URL") from exc
    approvals = Approvals(settings.policy, RedisApprovalStore(settings.redis_url), audit=audit)
    requests = SlackRequests(client, approvals, settings.slack.max_output_chars)
    return Desk(approvals, SlackShowing(requests, str(team), channel))
