"""Assertions about what opsbot sent to the model."""

from __future__ import annotations

from typing import Any


def assert_well_paired(body: dict[str, Any]) -> None:
    """Every assistant tool call is followed by exactly its results, in order, and no tool
    message stands without its call: what providers reject with a 400."""
    messages = body["messages"]
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["role"] == "tool":
            raise AssertionError(f"orphan tool message at {index}: {message}")
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant" and calls:
            expected = [c["id"] for c in calls]
            got = [m.get("tool_call_id") for m in messages[index + 1 : index + 1 + len(calls)]]
            roles = [m["role"] for m in messages[index + 1 : index + 1 + len(calls)]]
            assert roles == ["tool"] * len(calls) and got == expected, f"calls {expected} answered by {got}"
            index += len(calls)
        index += 1
