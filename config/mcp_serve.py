"""`opsbot mcp-serve`: opsbot's own tools served to other agents over MCP, under the policy.

```yaml
mcp_serve:
  tokens:                                   # over HTTP: a bearer token per caller
    - token_env: OPSBOT_MCP_TOKEN_ALICE     # the variable holding the token; never the token itself
      user: U024BE7LH                       # who the caller acts for: access is checked for this id
      groups: [oncall]                      # and these groups, as a Slack user's would be
  stdio: {user: alice, groups: [oncall]}    # over stdio (default: the local user, no groups)
  approvals_channel: C0123ABCD              # where writes wait for a person (Slack; needs REDIS_URL)
```

A caller is never a person at a keyboard: a write it asks for waits for the policy's approvers,
and the user its token names may not approve it, whatever `self_approval` says.
"""

from __future__ import annotations

from pydantic import Field

from .policy import EnvName, Strict


class Caller(Strict):
    user: str = Field(
        min_length=1,
        max_length=100,
        description="the id access is checked for (a Slack user id, or a name such as ci-agent); audit records name it",
    )
    groups: frozenset[str] = Field(default=frozenset(), description="groups the caller is a member of")


class CallerToken(Caller):
    token_env: EnvName = Field(description="the environment variable holding this caller's bearer token")


class McpServeSettings(Strict):
    tokens: list[CallerToken] = Field(
        default_factory=list, description="bearer tokens accepted over HTTP (--http), each mapped to a caller"
    )
    stdio: Caller | None = Field(
        default=None, description="the caller over stdio; default: the local user opsbot runs as, with no groups"
    )
    approvals_channel: str | None = Field(
        default=None,
        pattern=r"^[CG][A-Z0-9]{2,}$",
        description="Slack channel where a caller's writes are posted for approval (needs SLACK_BOT_TOKEN and "
        "REDIS_URL; `opsbot serve` takes the clicks); without it, writes wait at the --http terminal or are refused",
    )
