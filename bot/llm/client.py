"""The model: any OpenAI-compatible chat-completions endpoint, as real servers answer.

The one place that knows how a server speaks (DESIGN.md, "The model, as servers really answer").
It shapes every request so strict servers accept it (shaping.py), speaks the endpoint's protocol
(native tool calling, or ReAct / one-JSON-object text, protocols.py), and turns every reply into
one `ModelTurn`: calls with unique ids however they came (native, or written as text), the
thinking kept apart, a cut at the output limit said, usage and time to first token counted.

- Parameters: `max_tokens`, or `max_completion_tokens` for OpenAI's reasoning models (o-series,
  gpt-5), which also take no temperature but their default. A 400 naming any other parameter as
  unsupported is retried once without it, and the endpoint is remembered not to get it again.
  `llm.extra_body` passes server-specific options (vLLM's, Ollama's, LiteLLM's) through.
- `llm.protocol: auto` starts native and, for this endpoint, switches to ReAct text when the server
  refuses `tools` or answers in ReAct text, and logs that it did.
- Streaming (`llm.stream`): the reply comes in pieces, the answer text passed on as it is written
  (streaming.py); a server that refuses to stream is asked the plain way from then on.

Retries of 429/5xx/timeouts are the `openai` client's own (it honours `Retry-After`); once they
are spent, every failure becomes one `ModelUnavailable` whose message says what to do.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ...tools.cancel import Cancelled
from ...tools.redact import redact_text
from ..faults import nobody_there
from ..messages import ToolCallSpec
from ..telemetry import metrics, tracing
from .harmony import read_harmony
from .health import CHECK_TIMEOUT_S, ModelHealth, ModelState, served_names
from .protocols import Protocol, TextReply, read, render, speaks_react
from .reasoning import reasoning_field, split_thinking
from .shaping import ids_in, offered_names, template_safe, unique_ids
from .streaming import Assembled, TextSink, assemble
from .textcalls import calls_in_text
from .turns import ModelTurn, ModelUnavailable, Usage

if TYPE_CHECKING:
    # Imported where a client is made or its errors are read: `openai` takes most of a second to
    # import, which every command that needs no model (check-config, direct commands) would pay.
    import openai

log = logging.getLogger("opsbot.llm")

# OpenAI's reasoning models: `max_completion_tokens`, and no temperature but the default.
_REASONING_MODEL = re.compile(r"^(?:o\d|gpt-5)", re.I)
# What servers say when they cannot take `tools` (vLLM without --enable-auto-tool-choice,
# llama.cpp without --jinja, Ollama for a model without tool support, and others), or when their
# chat template cannot hold tool messages between the user's and the assistant's (a template that
# only knows strict alternation).
_REFUSES_TOOLS = re.compile(
    r"(?i)tool choice requires|requires --jinja|(?:does not|doesn't) support (?:tools|tool|function)"
    r"|(?:tools?|tool use|tool calling|function calling)(?: is| are)? not supported|roles must alternate"
)
_REFUSES_STREAM = re.compile(r"(?i)stream")
# How servers say a request outgrew the context: OpenAI's code `context_length_exceeded`, vLLM's "This
# model's maximum context length is N tokens", llama.cpp's "exceeds the available context size",
# LiteLLM's ContextWindowExceededError, Anthropic-style "prompt is too long".
_TOO_LONG = re.compile(
    r"(?i)context[_ ]length[_ ]exceeded|maximum context length|exceeds? the (?:available )?context|"
    r"context ?window ?exceeded|prompt is too long|too many tokens"
)
_SET_SERVED = "set OPSBOT_MODEL to one the server serves"
_CHECK_ADDRESS = "set OPENAI_BASE_URL to the model server's address (http://host:port/v1) and check that it runs"


class ModelClient:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        max_answer_tokens: int = 1024,
        protocol: Protocol = Protocol.auto,
        extra_body: dict[str, Any] | None = None,
        stream: bool = True,
        stream_idle_timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.sleep = sleep  # between attempts after an error inside a stream (tests pass their own)
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_answer_tokens = max_answer_tokens
        self.extra_body = dict(extra_body or {})
        self.stream = stream
        self.usage_in_stream = True  # `stream_options.include_usage`: not every server takes it
        self.configured = protocol
        # What this endpoint has shown it speaks and takes; learnt once, kept for the process.
        self.protocol: Protocol = Protocol.native if protocol is Protocol.auto else protocol
        self.dropped: set[str] = set()
        self.renamed: dict[str, str] = {}
        if base_url is None and _REASONING_MODEL.match(model):
            self.renamed["max_tokens"] = "max_completion_tokens"
            self.dropped.add("temperature")
        import openai

        # Local OpenAI-compatible servers take no key, but the client insists on one.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )
        # Streams: between two pieces `stream_idle_timeout_s` at most (the request's own timeout still
        # bounds the wait for the first). Made once: a copy of the client costs about a tool call.
        self._idle_s = min(stream_idle_timeout_s, timeout_s)
        self._streaming = self._client.with_options(timeout=openai.Timeout(timeout_s, read=self._idle_s))

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sink: TextSink | None = None
    ) -> ModelTurn:
        """One model call. `tools` None or empty: the model must answer in words. `sink` gets the
        answer text as it is written, when the endpoint streams."""
        started = time.monotonic()
        # OpenTelemetry's GenAI names, so tracing backends show model calls as such.
        named = {"gen_ai.operation.name": "chat", "gen_ai.request.model": self.model}
        with tracing.span("opsbot.model_call", named=named) as span:
            try:
                turn = self._complete(messages, tools, sink)
            except ModelUnavailable as exc:
                metrics.model_call(time.monotonic() - started, ok=False)
                span.set(status=exc.status)
                span.failed(str(exc))
                raise
            metrics.model_call(time.monotonic() - started, True, turn.usage.prompt_tokens, turn.usage.completion_tokens)
            span.set(
                {
                    "gen_ai.usage.input_tokens": turn.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": turn.usage.completion_tokens,
                },
                protocol=self.protocol.value,
                tool_calls=len(turn.tool_calls),
                cut=turn.cut,
            )
        return turn

    def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sink: TextSink | None
    ) -> ModelTurn:
        started = time.monotonic()
        protocol = self.protocol
        try:
            reply, first_token_s = self._ask(protocol, messages, tools, sink)
            turn = self._turn(protocol, reply, messages, tools, time.monotonic() - started, first_token_s)
        except _RefusedTools:
            self._switch(Protocol.react, "the server refused tool definitions")
            return self._complete(messages, tools, sink)
        except (AttributeError, IndexError, TypeError, ValueError, KeyError) as exc:
            # A proxy's HTML error page or a half-compatible server: say so rather than crash.
            raise ModelUnavailable(
                f"{self._where} returned a response opsbot cannot read ({type(exc).__name__}); "
                "check that OPENAI_BASE_URL is an OpenAI-compatible chat-completions endpoint",
                transient=False,
            ) from exc
        return turn

    # ---------------------------------------------------------------- the request

    def _ask(
        self,
        protocol: Protocol,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        sink: TextSink | None,
    ) -> _Sent:
        import openai

        shaped = template_safe(messages)
        if protocol is not Protocol.native:
            shaped = template_safe(render(protocol, shaped, tools))
        request = self._request(shaped, tools if protocol is Protocol.native else None)
        stream = self.stream and sink is not None
        adapted = failed_streams = silent_streams = 0
        while True:
            try:
                return self._send(request, protocol, stream, sink)
            except _WentSilent as silent:
                if silent_streams == 0:
                    silent_streams += 1
                    log.warning("%s went silent for %gs mid-answer; asking again", self._where, silent.idle_s)
                    if sink is not None:
                        sink.reset()
                    continue
                raise ModelUnavailable(
                    f"{self._where} went silent for {silent.idle_s:g}s in the middle of its answer, twice"
                ) from silent
            except openai.APIStatusError as exc:
                if stream and self.usage_in_stream and exc.status_code < 500 and "stream_options" in _said(exc):
                    self.usage_in_stream = False
                    log.info("%s takes no stream_options; streaming without usage from now on", self._where)
                    continue
                # llama.cpp answers its request errors with a 500 ("Cannot use tools with stream").
                if stream and exc.status_code <= 500 and _REFUSES_STREAM.search(_said(exc)):
                    self.stream = stream = False
                    log.info("%s does not stream; asking without streaming from now on", self._where)
                    continue
                if "tools" in request and self.configured is Protocol.auto and _refuses_tools(exc):
                    raise _RefusedTools from exc
                if adapted < 2 and self._adapt(request, exc):  # at most two unsupported parameters dropped
                    adapted += 1
                    continue
                raise self._unavailable(exc) from exc
            except openai.APIError as exc:
                # An error event inside a stream (`data: {"error": ...}`: OpenRouter, LiteLLM and vLLM
                # send one when the upstream provider fails mid-answer) arrives after a 200, so the
                # SDK retries nothing: it is retried here as a 5xx would be.
                if type(exc) is openai.APIError and failed_streams < self.max_retries:
                    failed_streams += 1
                    self._stream_failed(exc, failed_streams, sink)
                    continue
                raise self._unavailable(exc) from exc

    def _stream_failed(self, exc: openai.APIError, failures: int, sink: TextSink | None) -> None:
        """Before asking again: what was shown of the failed answer is taken back, and a pause as
        the SDK makes between its own retries (half a second, doubling, at most 8)."""
        log.warning(
            "%s sent an error inside its stream (%s); asking again (%d of %d)",
            self._where,
            redact_text(str(exc.message))[:200],
            failures,
            self.max_retries,
        )
        if sink is not None:
            sink.reset()
        self.sleep(min(8.0, 0.5 * 2 ** (failures - 1)))

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        for name, value in (("temperature", self.temperature), ("max_tokens", self.max_answer_tokens)):
            if name not in self.dropped:
                request[self.renamed.get(name, name)] = value
        if tools:
            request["tools"] = tools
        if self.extra_body:
            request["extra_body"] = self.extra_body
        return request

    def _send(self, request: dict[str, Any], protocol: Protocol, stream: bool, sink: TextSink | None) -> _Sent:
        import openai

        started = time.monotonic()
        if stream:
            streamed = {**request, "stream": True}
            if self.usage_in_stream:
                streamed["stream_options"] = {"include_usage": True}
            chunks = _posted(self._streaming, streamed, stream=True)
            try:
                assembled = assemble(chunks, started, protocol, sink)
            except Cancelled:
                chunks.close()  # the connection, not left for the garbage collector
                raise
            except openai.APITimeoutError as exc:
                chunks.close()
                raise _WentSilent(self._idle_s) from exc
            if assembled.finish_reason is not None or assembled.content or assembled.calls:
                return _Sent(assembled, assembled.first_token_s)
            # Nothing came as events: a server that ignores `stream` and answers whole.
            self.stream = False
            log.info("%s sent no stream events; asking without streaming from now on", self._where)
        response = _posted(self._client, request, stream=False)
        return _Sent(_whole(response), None)

    def _adapt(self, request: dict[str, Any], exc: openai.APIStatusError) -> bool:
        """Change the request as a 400 asks (an unsupported parameter), remembering it; False if
        the error asks for nothing opsbot can change."""
        if exc.status_code != 400:
            return False
        said, param = _said(exc), _param(exc)
        if param == "max_tokens" and "max_completion_tokens" in said and "max_tokens" in request:
            request["max_completion_tokens"] = request.pop("max_tokens")
            self.renamed["max_tokens"] = "max_completion_tokens"
        elif param in request and param not in ("model", "messages", "tools") and re.search(r"(?i)unsupported", said):
            del request[param]
            self.dropped.add(param)
        else:
            return False
        log.info("%s refused %s; asking without it from now on (%s)", self._where, param, said[:200])
        return True

    def _switch(self, protocol: Protocol, why: str) -> None:
        if self.protocol is not protocol:
            log.warning("%s: %s; speaking %s from now on", self._where, why, protocol.value)
            self.protocol = protocol

    # ---------------------------------------------------------------- the reply

    def _turn(
        self,
        protocol: Protocol,
        reply: Assembled,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        duration_s: float,
        first_token_s: float | None,
    ) -> ModelTurn:
        content, thinking = split_thinking(reply.content)
        harmony = read_harmony(content)
        if harmony is not None:
            content, thinking = harmony.answer, "\n".join(part for part in (thinking, harmony.thinking) if part)
        reasoning = "\n".join(part for part in (reply.reasoning.strip(), thinking) if part)
        calls = [
            ToolCallSpec(id=c["id"], name=c["name"], arguments=c["arguments"])
            for _, c in sorted(reply.calls.items())
            if c["name"]
        ]
        # Also on a step without tools: a call written there is not run, but it is no answer either.
        if not calls and harmony is not None:
            calls = [ToolCallSpec(id="", name=name, arguments=arguments) for name, arguments in harmony.calls]
        elif not calls:
            spoken = self._spoken(protocol, content)
            if spoken is not None:
                calls = [ToolCallSpec(id="", name=name, arguments=arguments) for name, arguments in spoken.calls]
                content = spoken.answer
        named = offered_names(calls, tools)
        usage = Usage(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            model_calls=1,
            first_token_ms=round(first_token_s * 1000, 1) if first_token_s is not None else None,
        )
        return ModelTurn(
            content=content,
            tool_calls=unique_ids(named.calls, ids_in(messages)),
            usage=usage,
            duration_s=duration_s,
            reasoning=reasoning,
            cut=reply.finish_reason == "length",
            renamed=tuple(named.renamed),
            finish_reason=reply.finish_reason,
            refusal=reply.refusal.strip(),
            model=self.model,
        )

    def _spoken(self, protocol: Protocol, content: str) -> TextReply | None:
        """Calls (or an answer) a reply holds as text: in the protocol spoken, or, natively,
        a message that is nothing but calls; or ReAct text, which tells `auto` what this is."""
        found = calls_in_text(content)
        if found is not None:
            # Any protocol: a model asked for ReAct may still write the calls it was trained on.
            return TextReply(found, "")
        if protocol is not Protocol.native:
            return read(protocol, content)
        if self.configured is Protocol.auto and speaks_react(content):
            self._switch(Protocol.react, "the model answered in ReAct text")
            return read(Protocol.react, content)
        return None

    @property
    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    # ---------------------------------------------------------------- the check

    def check(self, timeout_s: float | None = None) -> ModelHealth:
        """Whether the endpoint answers and serves this model: its list of models (GET /models),
        asked once within `timeout_s` (default: CHECK_TIMEOUT_S, or `llm.timeout_s` if shorter).
        A server without that list is reachable, but unverified."""
        import openai

        where = self._where
        timeout_s = timeout_s if timeout_s is not None else min(CHECK_TIMEOUT_S, self.timeout_s)
        try:
            listed = self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
            served = [str(model.id) for model in listed.data]
        except openai.AuthenticationError:
            return ModelHealth(
                state=ModelState.key_rejected, said=f"{where} rejected the API key (HTTP 401)", fix="set OPENAI_API_KEY"
            )
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 and exc.status_code != 501:
                return ModelHealth(
                    state=ModelState.unreachable,
                    said=f"{where} answered HTTP {exc.status_code}",
                    fix="check the model server (questions fail until it answers)",
                )
            # 404, 405, 501: no list to read; 403: a key that may not list models (OpenAI's restricted keys).
            if exc.status_code in (403, 404, 405, 501):
                return self._unverified(f"{where} lists no models (HTTP {exc.status_code})")
            return self._unverified(f"{where} answered GET /models with HTTP {exc.status_code}")
        except openai.APITimeoutError:
            return ModelHealth(
                state=ModelState.unreachable, said=f"{where} did not answer within {timeout_s:g}s", fix=_CHECK_ADDRESS
            )
        except openai.APIConnectionError as exc:
            why = nobody_there(exc) or redact_text(str(exc.__cause__ or exc))[:200]
            said = f"cannot connect to {where} ({why})"
            return ModelHealth(state=ModelState.unreachable, said=said, fix=_CHECK_ADDRESS)
        except (AttributeError, TypeError, ValueError, KeyError):
            return self._unverified(f"{where} answered GET /models with something opsbot cannot read")
        return self._served(served)

    def _served(self, served: list[str]) -> ModelHealth:
        where, model = self._where, self.model
        if not served:
            return self._unverified(f"{where} lists no models")
        # Ollama lists `name:latest` for a model asked for as `name`.
        if model in served or f"{model}:latest" in served:
            return ModelHealth(state=ModelState.ok, said=f"{where} serves model {model!r}")
        names = served_names(model, [redact_text(name)[:80] for name in served])
        return ModelHealth(
            state=ModelState.unknown_model,
            said=f"{where} does not serve model {model!r} (it serves {names.shown})",
            fix=f"did you mean {names.closest!r}? Set OPSBOT_MODEL to it" if names.closest else _SET_SERVED,
        )

    def _unverified(self, said: str) -> ModelHealth:
        return ModelHealth(
            state=ModelState.unverified,
            said=f"{said}, so model {self.model!r} is not checked",
            fix="nothing to set; the first question will tell",
        )

    def _unavailable(self, exc: openai.APIError) -> ModelUnavailable:
        import openai

        attempts = f"after {self.max_retries + 1} attempt(s)"
        where = self._where
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return ModelUnavailable(
                f"{where} rejected the API key (HTTP {exc.status_code}): check OPENAI_API_KEY", False, exc.status_code
            )
        if isinstance(exc, openai.NotFoundError):
            if self.model in _said(exc) or "model" in str(exc.code or ""):
                return ModelUnavailable(
                    f"{where} does not serve model {self.model!r} (HTTP 404): set OPSBOT_MODEL to one it serves",
                    False,
                    404,
                )
            return ModelUnavailable(
                f"{where} has no chat-completions endpoint (HTTP 404): OPENAI_BASE_URL usually ends in /v1", False, 404
            )
        if isinstance(exc, openai.RateLimitError):
            return ModelUnavailable(f"{where} is rate-limiting opsbot (HTTP 429) {attempts}", True, 429)
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailable(f"{where} did not answer within {self.timeout_s:g}s {attempts}")
        if isinstance(exc, openai.APIConnectionError):
            nobody = nobody_there(exc)
            if nobody is not None:
                # Nothing listens there, or no such host: a wrong address (or a server not started), not a blip.
                return ModelUnavailable(f"cannot connect to {where} ({nobody}): {_CHECK_ADDRESS}", False)
            return ModelUnavailable(f"cannot connect to {where} {attempts}: check OPENAI_BASE_URL and the network")
        if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
            return ModelUnavailable(f"{where} answered HTTP {exc.status_code} {attempts}", True, exc.status_code)
        if isinstance(exc, openai.APIStatusError):
            # 400/413/422: the provider refuses this request (often: too long). Retrying will not help.
            detail = redact_text(str(exc.message))[:300]
            if exc.code == "context_length_exceeded" or _TOO_LONG.search(_said(exc)):
                return ModelUnavailable(
                    f"{where} refused the request as longer than the model's context (HTTP {exc.status_code}: "
                    f"{detail}); lower loop.max_prompt_tokens to fit it",
                    False,
                    exc.status_code,
                    too_long=True,
                )
            return ModelUnavailable(
                f"{where} refused the request (HTTP {exc.status_code}: {detail})", False, exc.status_code
            )
        if type(exc) is openai.APIError:  # an error event inside the stream, the provider's own words
            said = redact_text(str(exc.message))[:300]
            return ModelUnavailable(f"{where} failed while answering, after {self.max_retries + 1} attempt(s): {said}")
        return ModelUnavailable(f"{where} failed: {redact_text(str(exc))[:300]}")


class _WentSilent(Exception):
    """A stream that started and then sent nothing for `idle_s`."""

    def __init__(self, idle_s: float) -> None:
        super().__init__(f"no stream event for {idle_s:g}s")
        self.idle_s = idle_s


class _Sent(NamedTuple):
    """A request's reply as assembled, and when its first token came (None: not streamed)."""

    reply: Assembled
    first_token_s: float | None


class _RefusedTools(Exception):
    """The server cannot take tool definitions: `auto` speaks a text protocol to it instead."""


def _refuses_tools(exc: openai.APIStatusError) -> bool:
    return exc.status_code in (400, 404, 422, 500, 501) and _REFUSES_TOOLS.search(_said(exc)) is not None


def _said(exc: openai.APIStatusError) -> str:
    return str(exc.message or "") + " " + str(exc.body or "")


def _param(exc: openai.APIStatusError) -> str | None:
    param = getattr(exc, "param", None)
    if isinstance(param, str):
        return param
    found = re.search(r"(?i)(?:unsupported (?:parameter|value)):? ?'(\w+)'", _said(exc))
    return found.group(1) if found else None


def _whole(response: Any) -> Assembled:
    """A non-streamed response as an assembled one."""
    choice = response.choices[0]
    message = choice.message
    usage = response.usage
    return Assembled(
        content=message.content or "",
        reasoning=reasoning_field(message),
        refusal=getattr(message, "refusal", None) or "",
        calls={
            index: {"id": c.id or "", "name": c.function.name or "", "arguments": c.function.arguments or ""}
            for index, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None) is not None
        },
        finish_reason=choice.finish_reason,
        prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
        completion_tokens=(usage.completion_tokens or 0) if usage else 0,
    )


def _posted(client: openai.OpenAI, request: dict[str, Any], stream: bool) -> Any:
    """POST /chat/completions with `request` as the body, as built. The SDK's `create` first walks
    the body against its parameter types (`maybe_transform`), about 80 µs a message on every
    request, a whole run's history each time, and changes nothing in what opsbot sends (JSON
    strings, lists and objects: tests/test_model_request_body.py holds that). `post` is the SDK's
    own way to send a body as is, with its retries, errors, auth and streaming."""
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    body = {key: value for key, value in request.items() if key != "extra_body"}
    body.update(request.get("extra_body") or {})
    return client.post(
        "/chat/completions",
        cast_to=ChatCompletion,
        body=body,
        stream=stream,
        stream_cls=openai.Stream[ChatCompletionChunk],
    )
