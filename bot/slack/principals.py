"""Who is asking, in policy's terms: Slack user, team and channel ids, and user group ids.

Group membership comes from `usergroups.list` (scope `usergroups:read`), cached briefly. When it
cannot be read, users count as members of no group: group rules then refuse rather than allow.
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ...config.policy import Policy, Principal

log = logging.getLogger("opsbot.slack")

# Said to a person of a team opsbot does not serve (its own workspace's and `slack.allowed_teams`).
OUTSIDER = (
    "opsbot only works for members of its own workspace; ask its maintainers to add your team to `slack.allowed_teams`."
)


def approves_commands(policy: Policy, principal: Principal | None) -> bool:
    """Whether the policy names `principal`, by user or group id, among those who approve write
    commands: the people who run opsbot, who may read the details of its failures. A command open
    to anyone, or to whoever is in a channel, names nobody."""
    return any(
        spec.risk == "write" and bool(spec.deciders.users or spec.deciders.groups) and spec.deciders.allows(principal)
        for spec in policy.commands.values()
    )


class Directory:
    def __init__(self, client: WebClient, ttl_s: float = 60.0) -> None:
        self.client = client
        self.ttl_s = ttl_s
        self._groups: dict[str, frozenset[str]] = {}
        self._fetched_at = float("-inf")
        self._lock = threading.Lock()

    def principal(self, user: str, team: str | None, channel: str | None) -> Principal:
        return Principal(platform="slack", user=user, team=team, channel=channel, groups=self.groups_of(user))

    def groups_of(self, user: str) -> frozenset[str]:
        with self._lock:
            if time.monotonic() - self._fetched_at >= self.ttl_s:
                self._groups = self._fetch()
                self._fetched_at = time.monotonic()
            return self._groups.get(user, frozenset())

    def _fetch(self) -> dict[str, frozenset[str]]:
        try:
            response = self.client.usergroups_list(include_users=True)
        except (SlackApiError, URLError, OSError) as exc:
            log.warning("cannot read user groups (%s): group rules in policy will refuse", exc)
            return {}
        members: dict[str, set[str]] = {}
        for group in response.get("usergroups") or []:
            for user in group.get("users") or []:
                members.setdefault(user, set()).add(group["id"])
        return {user: frozenset(ids) for user, ids in members.items()}
