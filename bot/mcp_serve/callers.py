"""Who calls: a bearer token over HTTP, mapped to the caller `mcp_serve.tokens` names; over stdio,
`mcp_serve.stdio` or the local user. A caller is a `Principal` of platform `mcp`: access is checked
for its user id and groups exactly as for a Slack user's, and audit records name it `mcp:<user>`.

Tokens are read from the environment variables the settings name, once, as the server starts; a
variable that is not set stops it with its name. Tokens are compared in constant time."""

from __future__ import annotations

import getpass
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass

from ...config.mcp_serve import Caller, McpServeSettings
from ...config.policy import Principal
from ...tools.environment import named_values

PLATFORM = "mcp"


class CallersError(Exception):
    """The settings cannot admit anyone this way (a token's variable unset, no tokens at all)."""


def principal_of(caller: Caller) -> Principal:
    return Principal(platform=PLATFORM, user=caller.user, groups=caller.groups)


def stdio_caller(settings: McpServeSettings) -> Principal:
    """The caller over stdio: whoever started the process, as the settings name them."""
    return principal_of(settings.stdio or Caller(user=getpass.getuser()))


@dataclass(frozen=True)
class Tokens:
    """The bearer tokens accepted over HTTP, each with its caller."""

    accepted: tuple[tuple[bytes, Principal], ...]

    @classmethod
    def of(cls, settings: McpServeSettings, environ: Mapping[str, str] | None = None) -> Tokens:
        if not settings.tokens:
            raise CallersError(
                "opsbot mcp-serve --http admits callers by bearer token: list them under mcp_serve.tokens "
                "(token_env: the variable holding a token, user: who the caller acts for)"
            )
        named = named_values({str(n): t.token_env for n, t in enumerate(settings.tokens)}, environ or os.environ)
        if named.unset is not None:
            raise CallersError(
                f"mcp_serve.tokens[{named.unset.key}] names the environment variable {named.unset.variable}, "
                "which is not set: set it to that caller's token"
            )
        return cls(tuple((named.values[str(n)].encode(), principal_of(t)) for n, t in enumerate(settings.tokens)))

    def caller(self, authorization: str | None) -> Principal | None:
        """The caller an `Authorization: Bearer <token>` header names, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = token.strip().encode()
        found: Principal | None = None
        for accepted, principal in self.accepted:
            # Every token is compared, whichever matches: the time taken says nothing of which.
            if hmac.compare_digest(given, accepted) and found is None:
                found = principal
        return found
