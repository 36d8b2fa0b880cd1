"""Alertmanager's API v2, one request at a time: the answer's JSON, or a ToolResult that says what
went wrong (tools/http.py reaches the server; the answer is read here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...config.policy import AlertmanagerSource
from ..base import ErrorType, ToolResult
from ..http import Server

if TYPE_CHECKING:
    from httpx import Response


class Client:
    """Requests to one named Alertmanager, with its headers and timeout."""

    def __init__(self, name: str, source: AlertmanagerSource, environ: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.source = source
        self._server = Server(f"Alertmanager {name}", source, environ)

    def get(self, path: str, params: list[tuple[str, str]]) -> Any:
        """The JSON of GET <url>/api/v2/<path>, or a ToolResult failure."""
        response = self._server.send("GET", self.source.api(path), params=params)
        return response if isinstance(response, ToolResult) else self._answer(response)

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """The JSON of POST <url>/api/v2/<path>, or a ToolResult failure."""
        response = self._server.send("POST", self.source.api(path), body=body)
        return response if isinstance(response, ToolResult) else self._answer(response)

    def _answer(self, response: Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success and body is not None:
            return body
        # Alertmanager says what it refused as a JSON string, or as an error object's message.
        said = body.get("message", "") if isinstance(body, dict) else body if isinstance(body, str) else ""
        error = str(said or response.text[:200]).strip()
        return _failure(self.name, response.status_code, error)


def _failure(name: str, status: int, error: str) -> ToolResult:
    if status in (400, 422):
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"Alertmanager {name} refused the request: {error}",
            hint="fix the matchers (name=value, name=~regex) and ask again",
        )
    if status in (401, 403):
        return ToolResult.failure(
            ErrorType.unavailable,
            f"Alertmanager {name} refused opsbot's credentials (HTTP {status})",
            hint="tell the user the source's headers in the policy need fixing",
        )
    return ToolResult.failure(
        ErrorType.unavailable,
        f"Alertmanager {name} answered HTTP {status}: {error}",
        hint="try again later",
        retryable=status >= 500,
    )
