"""A scripted OpenAI-compatible chat-completions server, spoken to over real HTTP.

A *policy* is a function from the request body (what the real `openai` client sent) to a
`Reply`: an answer, tool calls, empty content, or an HTTP error with headers. Policies react
to the messages they receive, so a test can script "call the tool, then answer from its result".
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    name: str
    arguments: str | dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    content: str | None = None
    calls: list[Call] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str | None = None


Policy = Callable[[dict[str, Any]], Reply]


def count_tokens(body: dict[str, Any]) -> int:
    """The server's own token count: words and punctuation of every message (not opsbot's estimate)."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return len(re.findall(r"\w+|[^\w\s]", text))


class ModelServer:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._counter = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server._counter += 1
                    number = server._counter
                reply = server.policy(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    payload = {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
                    self._send(reply.status, payload, reply.headers)
                    return
                self._send(200, server._completion(body, reply, number), reply.headers)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        # A short poll so __exit__ returns at once rather than after serve_forever's default half second.
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    @property
    def prompt_tokens(self) -> int:
        return sum(count_tokens(body) for body in self.requests)

    def _completion(self, body: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{number}_{index}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                    },
                }
                for index, call in enumerate(reply.calls)
            ]
        completion = len(re.findall(r"\w+|[^\w\s]", json.dumps(message)))
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or ("tool_calls" if reply.calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": count_tokens(body),
                "completion_tokens": completion,
                "total_tokens": count_tokens(body) + completion,
            },
        }


# Helpers that policies are built from.


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool results of the current turn (after the last engineer message), parsed."""
    messages = body["messages"]
    last_user = max(
        (
            i
            for i, m in enumerate(messages)
            if m["role"] == "user" and "[note from the opsbot loop" not in (m["content"] or "")
        ),
        default=-1,
    )
    return [json.loads(m["content"]) for m in messages[last_user + 1 :] if m["role"] == "tool"]


def has_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools"))


def is_summary_request(body: dict[str, Any]) -> bool:
    return "running summary" in (body["messages"][0].get("content") or "")


def script(*replies: Reply) -> Policy:
    """Answer requests with `replies` in order; the last one repeats."""
    queue = list(replies)
    lock = threading.Lock()

    def policy(body: dict[str, Any]) -> Reply:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return policy
