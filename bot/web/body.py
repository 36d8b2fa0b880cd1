"""Reading a request body under a cap, for every HTTP endpoint opsbot serves (Slack's, the alert
webhooks): the body is what signatures are checked on, so it is read whole, once, and only as
far as the cap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment


class BodyRefused(Exception):
    """The body cannot be read as sent: `status` (400, 411, 413) and what to change."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def read_body(environ: WSGIEnvironment, limit: int) -> bytes:
    """The request's body, at most `limit` bytes; `BodyRefused` when it is longer, shorter than its
    Content-Length says, or has no length to go by."""
    stream = environ["wsgi.input"]
    length_text = environ.get("CONTENT_LENGTH", "").strip()
    if length_text:
        if not (length_text.isascii() and length_text.isdigit()):
            raise BodyRefused(400, "Content-Length is not a number")
        length = int(length_text)
        if length > limit:
            raise BodyRefused(413, f"body over {limit} bytes")
        body = _read_up_to(stream, length)
        if len(body) < length:
            raise BodyRefused(400, "body shorter than its Content-Length")
        return body
    if environ.get("wsgi.input_terminated"):
        body = _read_up_to(stream, limit + 1)
        if len(body) > limit:
            raise BodyRefused(413, f"body over {limit} bytes")
        return body
    # Without a length, reading could wait for a body that never comes.
    raise BodyRefused(411, "send a Content-Length")


def _read_up_to(stream: Any, length: int) -> bytes:
    chunks: list[bytes] = []
    left = length
    while left > 0:
        chunk = stream.read(min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
