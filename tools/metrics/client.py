"""Prometheus' HTTP API, one GET at a time: the answer's `data`, or a ToolResult that says what
went wrong in the words the model and a person need (the error types of tools/base.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...config.policy import MetricsSource
from ..base import ErrorType, ToolResult
from ..http import Server

# Prometheus answers a bad query with 400 bad_data, its message starting with the position
# ("1:14: parse error: unexpected ..."), so the server's own parser is the syntax check: it knows
# the dialect of this very server (PromQL, MetricsQL) and needs nothing installed beside opsbot.
SYNTAX_HINT = "fix the PromQL at the position given (line:column) and query again"

if TYPE_CHECKING:
    from httpx import Response


class Client:
    """Requests to one named source, with its headers and timeout."""

    def __init__(self, name: str, source: MetricsSource, environ: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.source = source
        self._server = Server(f"metrics source {name}", source, environ)

    def get(self, path: str, params: list[tuple[str, str]]) -> Any:
        """The `data` of GET <url>/api/v1/<path>, or a ToolResult failure."""
        response = self._server.send(
            "GET",
            self.source.api(path),
            params=params,
            slow_hint="try again, or ask for a shorter range or fewer series",
        )
        return response if isinstance(response, ToolResult) else self._answer(response)

    def _answer(self, response: Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "success":
            return body.get("data")
        error = str(body.get("error", "")) if isinstance(body, dict) else ""
        kind = str(body.get("errorType", "")) if isinstance(body, dict) else ""
        return _failure(self.name, response.status_code, kind, error or response.text[:200])


def _failure(name: str, status: int, kind: str, error: str) -> ToolResult:
    if kind == "bad_data" or status == 400:
        return ToolResult.failure(ErrorType.invalid_args, _query_error(error), hint=SYNTAX_HINT)
    if kind == "timeout" or status == 503:
        return ToolResult.failure(
            ErrorType.timeout,
            f"metrics source {name} gave up on the query: {error}",
            hint="ask for a shorter range, a larger step or fewer series",
            retryable=True,
        )
    if kind == "execution" or status == 422:
        return ToolResult.failure(
            ErrorType.failed,
            f"metrics source {name} could not run the query: {error}",
            hint="narrow it: fewer series (label matchers, sum by(...)), a shorter range or a larger step",
        )
    if status in (401, 403):
        return ToolResult.failure(
            ErrorType.unavailable,
            f"metrics source {name} refused opsbot's credentials (HTTP {status})",
            hint="tell the user the source's headers in the policy need fixing",
        )
    return ToolResult.failure(
        ErrorType.unavailable,
        f"metrics source {name} answered HTTP {status}: {error}",
        hint="try again later",
        retryable=status >= 500,
    )


def _query_error(error: str) -> str:
    # Prometheus wraps the parser's words: `invalid parameter "query": 1:14: parse error: ...`.
    text = error.removeprefix('invalid parameter "query": ')
    return f"PromQL error at {text}" if text[:1].isdigit() else f"the query was refused: {text}"
