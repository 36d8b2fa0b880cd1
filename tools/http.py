"""One request to a server the policy names (config/policy/http.py `HttpSource`: a metrics source,
an Alertmanager): the headers read from the environment variables the policy names, the source's
timeout, and a server that cannot be reached a ToolResult in the words the model and a person need
(`timeout` and `unavailable`, retryable). What the server answers is its caller's to read."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..config.policy import HttpSource
from .base import ErrorType, ToolResult
from .environment import named_values

if TYPE_CHECKING:
    from httpx import Response


class Server:
    """Requests to one named source, with its headers and timeout."""

    def __init__(self, what: str, source: HttpSource, environ: Mapping[str, str] | None = None) -> None:
        """`what` names the source for people: "metrics source prod", "Alertmanager main"."""
        self.what = what
        self.source = source
        self._environ = os.environ if environ is None else environ

    def send(
        self,
        method: str,
        url: str,
        *,
        params: Sequence[tuple[str, str]] = (),
        body: Any = None,
        slow_hint: str = "try again",
    ) -> Response | ToolResult:
        """The server's response, whatever its status, or a ToolResult when none came."""
        # Only here: direct commands and a terminal without these tools never pay for httpx's imports.
        import httpx

        headers = self._headers()
        if isinstance(headers, ToolResult):
            return headers
        try:
            return httpx.request(
                method, url, params=tuple(params), json=body, headers=headers, timeout=self.source.timeout_s
            )
        except httpx.TimeoutException:
            return ToolResult.failure(
                ErrorType.timeout,
                f"{self.what} did not answer within {self.source.timeout_s:g}s",
                hint=slow_hint,
                retryable=True,
            )
        except httpx.HTTPError as exc:
            reason = (
                "connection refused or no route to it" if isinstance(exc, httpx.ConnectError) else type(exc).__name__
            )
            return ToolResult.failure(
                ErrorType.unavailable,
                f"cannot reach {self.what}: {reason}",
                hint="try again later; if it keeps failing, tell the user the source is down",
                retryable=True,
            )

    def _headers(self) -> dict[str, str] | ToolResult:
        named = named_values(self.source.headers, self._environ)
        if named.unset is not None:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"{self.what} needs the environment variable {named.unset.variable} (its {named.unset.key} header), "
                "which is not set where opsbot runs",
                hint="tell the user an operator must set it",
            )
        return named.values


def described(sources: Mapping[str, HttpSource]) -> str:
    """The sources a tool's description lists: `name (description)`, or the name alone."""
    return "; ".join(f"{name} ({s.description})" if s.description else name for name, s in sources.items())


def wait_s(sources: Mapping[str, HttpSource], requests: int) -> float:
    """How long the executor waits for a call of `requests` requests: each stops itself at its
    source's timeout, so the slowest source's, times the requests, and a second."""
    return requests * max(s.timeout_s for s in sources.values()) + 1 if sources else 1.0
