"""OpenAI's pairing rules for what opsbot sends to a model, and assertions about it.

The scripted server (tests/fakes/model_server.py) refuses, with OpenAI's own 400, every request
that breaks them, in every test of the suite: other servers often do not check, so a fake must.
"""

from __future__ import annotations

from typing import Any


def openai_error(
    message: str, type: str | None = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An error body in OpenAI's shape: https://platform.openai.com/docs/guides/error-codes."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def openai_ordering_error(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """OpenAI's 400 body for a message list that breaks its pairing rules, or None.

    - An assistant message with `tool_calls` must be followed by tool messages answering every
      id: "An assistant message with 'tool_calls' must be followed by tool messages responding to
      each 'tool_call_id'. The following tool_call_ids did not have response messages: <ids>"
      (param `messages.[N].role`; router-for-me/CLIProxyAPI#2798, BerriAI/litellm#10083).
    - A tool message must answer a call of the assistant message just before its run of tool
      messages: "Invalid parameter: messages with role 'tool' must be a response to a preceeding
      message with 'tool_calls'." (OpenAI's spelling; openai/openai-go#43, smarter-sh/smarter#264,
      param `messages.[N].role`).
    - Two tool messages with one `tool_call_id`: "Invalid parameter: Duplicate value for
      'tool_call_id' of '<id>', in messages[A] and messages[B]." (param `messages.[B].tool_call_id`;
      agno-agi/agno#5116, neuron-core/neuron-ai#46).

    Which message the `param` of the first rule names is not documented; here it is the
    assistant message whose calls went unanswered."""
    seen: dict[str, int] = {}
    open_ids: list[str] | None = None
    opened_at = -1
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id in seen:
                return openai_error(
                    f"Invalid parameter: Duplicate value for 'tool_call_id' of '{call_id}', "
                    f"in messages[{seen[call_id]}] and messages[{index}].",
                    param=f"messages.[{index}].tool_call_id",
                )
            seen[call_id] = index
            if open_ids is None or call_id not in open_ids:
                return openai_error(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            open_ids.remove(call_id)
            continue
        if open_ids:
            break
        calls = (message.get("tool_calls") or []) if message.get("role") == "assistant" else []
        open_ids = [str(call.get("id")) for call in calls] if calls else None
        opened_at = index
    if open_ids:
        return openai_error(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_ids)}",
            param=f"messages.[{opened_at}].role",
        )
    return None


def assert_well_paired(body: dict[str, Any]) -> None:
    """Every assistant tool call is followed by exactly its results, in order, and no tool
    message stands without its call: what providers reject with a 400."""
    error = openai_ordering_error(body["messages"])
    assert error is None, error["error"]["message"]
