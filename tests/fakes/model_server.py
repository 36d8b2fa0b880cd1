"""A scripted OpenAI-compatible chat-completions server, spoken to over real HTTP.

A *policy* is a function from the request body (what the real `openai` client sent) to a
`Reply`: an answer, tool calls, empty content, or an HTTP error with headers. Policies react
to the messages they receive, so a test can script "call the tool, then answer from its result".

The server answers the way OpenAI does: one JSON body, or, when the request says
`"stream": true`, Server-Sent Events in OpenAI's chunk shapes (the shapes recorded from the live
API in openai-python's `.inline-snapshot/external/*.bin` stream snapshots, and the types in
`src/openai/types/chat/chat_completion_chunk.py`). How one server family frames the same answer
(its tool call ids, the name of its reasoning field, whole or piecewise tool call deltas, where
the usage goes in a stream) is a `Wire`; `tests/fakes/servers.py` builds one per family.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fakes.checks import openai_ordering_error


@dataclass
class Call:
    name: str
    arguments: str | dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    """One answer. `status` other than 200 answers with `error` as the whole JSON body (a
    documented error body, e.g. `openai_error(...)`), or a generic one when `error` is None.

    `reasoning` is the model's reasoning, sent in the wire's reasoning field. `stream=False`
    makes the server ignore a request's `"stream": true` and answer one JSON body, one way a
    server that cannot stream answers (the openai client then finds no events in it; a server
    that refuses instead is an error reply, e.g. llama.cpp's in `tests/fakes/servers.py`).
    `chunk_delay_s` spaces the streamed chunks, so a test can see the first one arrive early.
    `stream_error` ends a stream halfway with that error event (`data: {"error": {...}}`) and no
    `[DONE]`, as OpenRouter and LiteLLM do when the upstream provider fails mid-answer."""

    content: str | None = None
    calls: list[Call] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str | None = None
    error: dict[str, Any] | None = None
    reasoning: str | None = None
    stream: bool = True
    chunk_delay_s: float = 0.0
    stream_error: dict[str, Any] | None = None
    # Streamed instead of the deltas OpenAI would send for `calls`: each a `tool_calls[]` entry, one per chunk.
    call_deltas: list[dict[str, Any]] | None = None
    refusal: str | None = None  # OpenAI's `refusal` field: the model declined


Policy = Callable[[dict[str, Any]], Reply]

CallIds = Callable[[int, int], str]
"""Makes a tool call id from the request's number and the call's index in the message."""


def numbered_call_id(number: int, index: int) -> str:
    return f"call_{number}_{index}"


@dataclass(frozen=True)
class Wire:
    """How a server frames an answer, apart from what the model said.

    - `call_id`: ids given to tool calls that have none of their own.
    - `reasoning_field`: the message (and delta) field that carries `Reply.reasoning`.
    - `whole_call_deltas`: stream each tool call whole in one delta (Ollama) instead of OpenAI's
      first delta with id and name followed by the arguments in pieces.
    - `stream_usage`, when the request asks for `stream_options.include_usage`: `"final_chunk"`
      (OpenAI: a last chunk with `choices: []`), `"on_last_choice"` (on the chunk that carries
      the finish reason), or `"omitted"` (never sent)."""

    call_id: CallIds = numbered_call_id
    reasoning_field: str = "reasoning_content"
    whole_call_deltas: bool = False
    stream_usage: Literal["final_chunk", "on_last_choice", "omitted"] = "final_chunk"


def count_tokens(body: dict[str, Any]) -> int:
    """The server's own token count: words and punctuation of every message (not opsbot's estimate)."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return len(re.findall(r"\w+|[^\w\s]", text))


def words(text: str) -> list[str]:
    """`text` in the pieces a streamed answer carries: words with their leading spaces."""
    return re.findall(r"\s*\S+|\s+", text)


def slices(text: str, size: int = 6) -> list[str]:
    """Tool call arguments in the short fragments OpenAI streams them in."""
    return [text[start : start + size] for start in range(0, len(text), size)]


class _QuietServer(ThreadingHTTPServer):
    """A client that went away mid-reply (a killed opsbot, a cancelled run) is no error of the fake's."""

    # socketserver's backlog of 5 drops connections when dozens of runs ask at once, and a dropped
    # SYN is sent again only after a second: a hosted model's server takes them all.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ModelServer:
    """`check_ordering`: refuse, with OpenAI's 400, every request that breaks its pairing rules
    before the policy sees it (tests/fakes/checks.py); a flavour that checks them itself turns it off.
    `models`: the ids GET /v1/models lists, in OpenAI's list shape; None answers it 404, as a
    server without the endpoint does. `listings` counts the GETs."""

    def __init__(
        self, policy: Policy, wire: Wire | None = None, check_ordering: bool = True, models: list[str] | None = None
    ) -> None:
        self.policy = policy
        self.models = models
        self.listings = 0
        self.check_ordering = check_ordering
        self.wire = wire or Wire()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each POST's headers, names in lower case
        self._lock = threading.Lock()
        self._counter = 0
        # Set on __exit__: a reply still being delayed goes out at once, so the server stops promptly.
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with server._lock:
                    server.listings += 1
                if self.path.rstrip("/") != "/v1/models" or server.models is None:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}, {})
                    return
                listed = [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in server.models]
                self._send(200, {"object": "list", "data": listed}, {})

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({name.lower(): value for name, value in self.headers.items()})
                    server._counter += 1
                    number = server._counter
                refusal = openai_ordering_error(body.get("messages", [])) if server.check_ordering else None
                reply = Reply(status=400, error=refusal) if refusal else server.policy(body)
                if reply.delay_s:
                    server._closing.wait(reply.delay_s)  # a slow model, but no slower than the test lasts
                if reply.status != 200:
                    payload = reply.error or {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
                    self._send(reply.status, payload, reply.headers)
                    return
                if body.get("stream") and reply.stream:
                    self._stream(server._chunks(body, reply, number), reply)
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

            def _stream(self, chunks: list[dict[str, Any]], reply: Reply) -> None:
                # HTTP/1.0 without Content-Length: the body ends when the connection closes.
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                sent = chunks[: len(chunks) // 2] if reply.stream_error else chunks
                for chunk in sent:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if reply.chunk_delay_s:
                        server._closing.wait(reply.chunk_delay_s)
                if reply.stream_error:
                    self.wfile.write(f"data: {json.dumps({'error': reply.stream_error})}\n\n".encode())
                    return
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args: Any) -> None:
                pass

        self._http = _QuietServer(("127.0.0.1", 0), Handler)
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
        self._closing.set()
        self._http.shutdown()
        self._http.server_close()

    @property
    def prompt_tokens(self) -> int:
        return sum(count_tokens(body) for body in self.requests)

    def _message(self, reply: Reply, number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.reasoning is not None:
            message[self.wire.reasoning_field] = reply.reasoning
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": self.wire.call_id(number, index) if call.id is None else call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                    },
                }
                for index, call in enumerate(reply.calls)
            ]
        return message

    @staticmethod
    def _usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
        completion = len(re.findall(r"\w+|[^\w\s]", json.dumps(message)))
        return {
            "prompt_tokens": count_tokens(body),
            "completion_tokens": completion,
            "total_tokens": count_tokens(body) + completion,
        }

    @staticmethod
    def _finish_reason(reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.calls else "stop")

    def _completion(self, body: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
        message = self._message(reply, number)
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason(reply)}],
            "usage": self._usage(body, message),
        }

    def _chunks(self, body: dict[str, Any], reply: Reply, number: int) -> list[dict[str, Any]]:
        """The answer as OpenAI streams it: a role chunk, reasoning and content in word pieces,
        each tool call as `tool_calls[i]` deltas, an empty delta with the finish reason, and the
        usage only when the request asked for it (`stream_options.include_usage`)."""
        message = self._message(reply, number)
        base = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**base, "choices": [choice]}

        chunks = [chunk({"role": "assistant", "content": "" if reply.content is not None else None, "refusal": None})]
        field_name = self.wire.reasoning_field
        chunks += [chunk({field_name: piece}) for piece in words(reply.reasoning or "")]
        chunks += [chunk({"content": piece}) for piece in words(reply.content or "")]
        chunks += [chunk({"refusal": piece}) for piece in words(reply.refusal or "")]
        if reply.call_deltas is not None:
            chunks += [chunk({"tool_calls": [delta]}) for delta in reply.call_deltas]
        for index, call in enumerate(message.get("tool_calls", []) if reply.call_deltas is None else []):
            head = {"index": index, "id": call["id"], "type": "function", "function": dict(call["function"])}
            if self.wire.whole_call_deltas:
                chunks.append(chunk({"tool_calls": [head]}))
                continue
            arguments = head["function"]["arguments"]
            head["function"]["arguments"] = ""
            chunks.append(chunk({"tool_calls": [head]}))
            pieces = [{"index": index, "function": {"arguments": piece}} for piece in slices(arguments)]
            chunks += [chunk({"tool_calls": [piece]}) for piece in pieces]
        last = chunk({}, self._finish_reason(reply))
        chunks.append(last)
        if (body.get("stream_options") or {}).get("include_usage") is True:
            usage = self._usage(body, message)
            if self.wire.stream_usage == "final_chunk":
                chunks.append({**base, "choices": [], "usage": usage})
            elif self.wire.stream_usage == "on_last_choice":
                last["usage"] = usage
        return chunks


# Helpers that policies are built from.


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = body["messages"][-1]
    return message


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
