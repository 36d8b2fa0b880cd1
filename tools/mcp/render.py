"""What a server's answer to tools/call becomes: its text and structured content as data, images,
audio and binary resources said but not sent, its `isError` a `failed` result with its text.

The SDK's result objects are read by their field names only (type, text, mime_type, ...), so this
module imports nothing of it. Whatever is kept is then redacted and made inert by the executor,
and cut to the result budget by the loop, like every tool's result; a result larger than
MAX_RESULT_CHARS is cut here first, so a server cannot make opsbot redact megabytes."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..base import ErrorType, ToolResult
from ..text import cut_middle

MAX_RESULT_CHARS = 200_000


def rendered(what: str, result: Any) -> ToolResult:
    """`result` (a CallToolResult) of tool `what` ("git__git_status") as a ToolResult."""
    texts: list[str] = []
    withheld: list[str] = []
    for block in result.content or []:
        text, said = _block(block)
        if text is not None:
            texts.append(text)
        if said is not None:
            withheld.append(said)
    text = "\n".join(texts)
    cut = None
    if len(text) > MAX_RESULT_CHARS:
        short = cut_middle(text, MAX_RESULT_CHARS, head_share=0.4)
        cut = f"the server's text was {len(text):,} characters; {short.cut:,} cut from the middle"
        text = short.text
    if result.is_error:
        return ToolResult.failure(
            ErrorType.failed,
            f"{what} failed: {text or 'the server gave no reason'}",
            hint="the server refused or could not do it; read its message before calling again",
        )
    data: dict[str, Any] = {"text": text}
    if result.structured_content is not None:
        data["structured"] = result.structured_content
    if withheld:
        data["not_sent"] = withheld
    return ToolResult(ok=True, data=data, truncated=cut)


class Read(NamedTuple):
    text: str | None  # what goes to the model
    said: str | None  # what was left out, in words


def _block(block: Any) -> Read:
    kind = getattr(block, "type", "?")
    if kind == "text":
        return Read(block.text, None)
    if kind in ("image", "audio"):
        return Read(None, f"{kind} ({block.mime_type}, {len(block.data) * 3 // 4:,} bytes): not sent")
    if kind == "resource":
        resource = block.resource
        if getattr(resource, "text", None) is not None:
            return Read(f"[{resource.uri}]\n{resource.text}", None)
        return Read(None, f"binary resource {resource.uri} ({resource.mime_type or 'unknown type'}): not sent")
    if kind == "resource_link":
        return Read(f"[link to {block.uri}]", None)
    return Read(None, f"a {kind} block: not sent")
