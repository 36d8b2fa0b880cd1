"""Fakes of the model servers opsbot meets, each answering the way that server family does.

A *flavour* is one server family (OpenAI, vLLM, Ollama, llama.cpp's llama-server, the LiteLLM
proxy, a ReAct text model) with its quirks as switches. It wraps a scripted policy from
`tests/fakes/model_server.py`:

    with flavoured_server("vllm", tool_parser=None, script=[
        Reply(calls=[Call("query_logs", {"service": "checkout"})]),
        Reply(content="checkout is returning 502s because payments times out"),
    ]) as server:
        ...  # point the real `openai` client at server.base_url

For each request a flavour first decides whether that server would refuse it (an HTTP error
with that server's own body), and only then asks the script, so a refused request does not use
up a scripted reply. It then renders the scripted reply as that server would: tool calls native
or written as text into `content`, reasoning in a field or inside `<think>` tags, its own tool
call ids and stream framing (a `Wire`).

Every quirk cites where it is documented: a file in the server's repository, or a public issue
that shows the server's answer.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tests.fakes.checks import openai_error, openai_ordering_error
from tests.fakes.model_server import Call, CallIds, ModelServer, Policy, Reply, Wire, script

TextFormat = Literal["hermes", "mistral", "llama3", "bare_json", "fenced"]
"""How a model writes a tool call as text when no parser turns it into `tool_calls`:

- `hermes`: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, one block per call
  (Hermes 2 Pro and Qwen2.5/Qwen3 chat templates; vLLM `vllm/tool_parsers/hermes_tool_parser.py`
  looks for exactly these tags).
- `mistral`: `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]` (Mistral v3 tokenizers; vLLM
  `vllm/tool_parsers/mistral_tool_parser.py`, bot token `[TOOL_CALLS]`).
- `llama3`: `<|python_tag|>{"name": ..., "parameters": {...}}`, calls separated by `; ` (Llama 3.1
  model card, "JSON based tool calling"; vLLM `vllm/tool_parsers/llama_tool_parser.py`).
- `bare_json`: `{"name": ..., "parameters": {...}}`, one per line (the same Llama 3.x format without
  the tag, which Llama 3.2 models emit).
- `fenced`: a fenced json code block around `{"name": ..., "arguments": {...}}` per call (chatty
  models and ones prompted with a JSON protocol)."""

TemplateStyle = Literal["alternate", "mistral"]
"""A strict chat template's role check, as the Jinja templates write it:

- `alternate`: after an optional first system message, messages must go user, assistant, user,
  ... and anything else where a user turn is due raises "Conversation roles must alternate
  user/assistant/user/assistant/..." (the Hugging Face templates of Mistral-7B-Instruct-v0.1/v0.2,
  Llama-2-chat and Gemma; e.g. microsoft/autogen#1037, suitenumerique/conversations#197 for Gemma 3
  with a second system message).
- `mistral`: the same check over user messages and assistant answers only, skipping tool
  messages and assistant messages with tool calls, raising "After the optional system message,
  conversation roles must alternate user/assistant/user/assistant/..." (Mistral-7B-Instruct-v0.3's
  template; vllm-project/vllm#6862 shows two user messages in a row refused)."""

ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
MISTRAL_V3 = "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."


def _arguments_json(call: Call) -> str:
    """The arguments as the model wrote them: a string stays as it is (even broken JSON)."""
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def calls_as_text(calls: list[Call], text_format: TextFormat) -> str:
    """`calls` written the way a model writes them in `content` (see `TextFormat`)."""

    def obj(call: Call, key: str) -> str:
        return f'{{"name": {json.dumps(call.name)}, "{key}": {_arguments_json(call)}}}'

    if text_format == "hermes":
        return "\n".join(f"<tool_call>\n{obj(call, 'arguments')}\n</tool_call>" for call in calls)
    if text_format == "mistral":
        return "[TOOL_CALLS][" + ", ".join(obj(call, "arguments") for call in calls) + "]"
    if text_format == "llama3":
        return "<|python_tag|>" + "; ".join(obj(call, "parameters") for call in calls)
    if text_format == "bare_json":
        return "\n".join(obj(call, "parameters") for call in calls)
    return "\n".join(f"```json\n{obj(call, 'arguments')}\n```" for call in calls)


def with_calls_as_text(reply: Reply, text_format: TextFormat) -> Reply:
    """The reply with its tool calls written into `content` after any text the model wrote first."""
    if not reply.calls:
        return reply
    text = calls_as_text(reply.calls, text_format)
    content = f"{reply.content}\n{text}" if reply.content else text
    return replace(reply, content=content, calls=[], finish_reason=_text_finish_reason(reply))


def _text_finish_reason(reply: Reply) -> str:
    """A reply whose calls became text ends with "stop", unless it was cut ("length")."""
    return "stop" if reply.finish_reason in (None, "tool_calls") else reply.finish_reason


def with_think_tags(reply: Reply, opening: bool = True) -> Reply:
    """The reply with its reasoning inside `<think>...</think>` at the start of `content`, as a
    reasoning model (DeepSeek-R1 distills, QwQ, Qwen3) writes it when no reasoning parser takes it
    out. `opening=False` drops the opening tag: templates that end the prompt with `<think>\\n`
    (DeepSeek-R1-0528, QwQ) make the model start inside the thought."""
    if reply.reasoning is None:
        return reply
    thought = f"<think>\n{reply.reasoning}\n</think>" if opening else f"{reply.reasoning}\n</think>"
    return replace(reply, content=f"{thought}\n\n{reply.content or ''}", reasoning=None)


def template_error(messages: list[dict[str, Any]], style: TemplateStyle) -> str | None:
    """The message a strict chat template raises for `messages`, or None (see `TemplateStyle`)."""
    rest = messages[1:] if messages and messages[0].get("role") == "system" else messages
    if style == "mistral":
        rest = [m for m in rest if m.get("role") != "tool" and not m.get("tool_calls")]
    for position, message in enumerate(rest):
        if (message.get("role") == "user") != (position % 2 == 0):
            return ALTERNATE if style == "alternate" else MISTRAL_V3
    return None


def random_ids(prefix: str, alphabet: str, length: int) -> CallIds:
    def call_id(number: int, index: int) -> str:
        return prefix + "".join(random.choices(alphabet, k=length))

    return call_id


def as_policy(source: Policy | Sequence[Reply]) -> Policy:
    """A policy as it is, or replies to answer in order (the last one repeats)."""
    return source if callable(source) else script(*source)


class Flavour:
    """One server family: what it refuses, how it renders a scripted reply, how it frames it."""

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        """The error this server answers `body` with before the model runs, or None."""
        return None

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        """The scripted model output as this server hands it to the client."""
        return reply

    def wire(self) -> Wire:
        return Wire()

    def wrap(self, policy: Policy) -> Policy:
        def flavoured(body: dict[str, Any]) -> Reply:
            # OpenAI's pairing rules first, here rather than in the server, so that a proxy in
            # front (LiteLLM) relays the refusal in its own body.
            broken = openai_ordering_error(body.get("messages", []))
            refusal = Reply(status=400, error=broken) if broken else self.refuse(body)
            if refusal is not None:
                return refusal
            reply = policy(body)
            return self.render(body, reply) if reply.status == 200 else reply

        return flavoured

    def serve(self, source: Policy | Sequence[Reply]) -> ModelServer:
        return ModelServer(self.wrap(as_policy(source)), self.wire(), check_ordering=False)


@dataclass
class OpenAIFlavour(Flavour):
    """The OpenAI API, the reference every other server is compared with.

    OpenAI's pairing rules are every fake's (tests/fakes/checks.py `openai_ordering_error`).
    - `reasoning_models`: a regular expression over the model name. Reasoning models (o-series,
      gpt-5 family) refuse `max_tokens` ("Unsupported parameter: 'max_tokens' is not supported with
      this model. Use 'max_completion_tokens' instead.", param `max_tokens`, code
      `unsupported_parameter`; pydantic/pydantic-ai#1205, FoundationAgents/OpenManus#423) and a
      temperature other than 1 ("Unsupported value: 'temperature' does not support 0 with this
      model. Only the default (1) value is supported.", param `temperature`, code
      `unsupported_value`; gabrii/Cursor-Azure-GPT-5#33, OpenHands/OpenHands#4131 shows the value
      echoed as sent, `0.0`).

    Tool call ids are `call_` and 24 letters and digits, as in the live stream recordings in
    openai-python's `.inline-snapshot/external/`. Chat completions never return reasoning text,
    so a scripted `reasoning` is dropped."""

    reasoning_models: str = r"^(o\d|gpt-5)"

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        if re.match(self.reasoning_models, str(body.get("model", ""))):
            if body.get("max_tokens") is not None:
                return Reply(
                    status=400,
                    error=openai_error(
                        "Unsupported parameter: 'max_tokens' is not supported with this model. "
                        "Use 'max_completion_tokens' instead.",
                        param="max_tokens",
                        code="unsupported_parameter",
                    ),
                )
            temperature = body.get("temperature")
            if temperature is not None and temperature != 1:
                return Reply(
                    status=400,
                    error=openai_error(
                        f"Unsupported value: 'temperature' does not support {json.dumps(temperature)} with this "
                        "model. Only the default (1) value is supported.",
                        param="temperature",
                        code="unsupported_value",
                    ),
                )
        return None

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        return replace(reply, reasoning=None)

    def wire(self) -> Wire:
        return Wire(call_id=random_ids("call_", string.ascii_letters + string.digits, 24))


@dataclass
class VLLMFlavour(Flavour):
    """vLLM's OpenAI-compatible server (`vllm serve`).

    - `auto_tool_choice` / `tool_parser`: `--enable-auto-tool-choice` and `--tool-call-parser`.
      Without both, a request with `tools` and `tool_choice` "auto" (the default once tools are
      given, `vllm/entrypoints/openai/protocol.py`) is refused with 400 "\\"auto\\" tool choice
      requires --enable-auto-tool-choice and --tool-call-parser to be set"
      (`vllm/entrypoints/openai/serving_chat.py`); the Mistral tokenizer is exempt from that check.
      With both, calls come back as `tool_calls`. A request without tools (the client's own text
      protocol) or with `tool_choice` "none" gets the model's calls as text in `content`, in
      `text_format`; "required" or a named tool choice is decoded into `tool_calls` regardless.
    - `reasoning`: `"raw"` (no `--reasoning-parser`: the model's `<think>...</think>` stays in
      `content`), `"reasoning_content"` (the field older vLLM versions fill) or `"reasoning"` (the
      field of `ChatMessage` in `vllm/entrypoints/openai/chat_completion/protocol.py` today).
    - `mistral`: `--tokenizer-mode mistral`. Tool call ids in the request are cut to their last 9
      characters (`truncate_tool_call_ids` in `vllm/tokenizers/mistral.py`, formerly
      `vllm/transformers_utils/tokenizers/mistral.py`), then mistral-common
      refuses any that are not 9 letters or digits: "Tool call id was <id> but must be a-z, A-Z,
      0-9, with a length of 9." (raised as ValueError, so 400; `vllm/renderers/mistral.py`
      `safe_apply_chat_template`; vllm-project/vllm#10821, #12332). Generated ids are 9
      alphanumerics (`MistralToolCall.generate_random_id`) and calls as text use `[TOOL_CALLS]`.
    - `strict_template`: the model's chat template raises on role order (`TemplateStyle`); vLLM
      answers the template error with 400.
    - `error_format`: `"flat"` is the 2024 body `{"object": "error", "message": ..., "type":
      "BadRequestError", "param": null, "code": 400}` (weaviate/Verba#150, vllm-project/vllm#6862);
      `"nested"` is today's `{"error": {...}}` (`ErrorResponse`/`ErrorInfo` in
      `vllm/entrypoints/openai/engine/protocol.py`, `create_error_response` in `engine/serving.py`);
      `"nested_doubled"` is the 2025 `serving_chat.py` that answered preprocessing errors with
      `f"{e} {e.__cause__}"`, so template and tokenizer errors read twice
      (suitenumerique/conversations#197).

    Generated tool call ids are `chatcmpl-tool-` and 32 hex digits (`make_tool_call_id`)."""

    auto_tool_choice: bool = True
    tool_parser: str | None = "hermes"
    text_format: TextFormat = "hermes"
    reasoning: Literal["raw", "reasoning_content", "reasoning"] = "reasoning"
    mistral: bool = False
    strict_template: TemplateStyle | None = None
    error_format: Literal["flat", "nested", "nested_doubled"] = "nested"

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        if self._tool_choice(body) == "auto" and not (self.auto_tool_choice and self.tool_parser) and not self.mistral:
            return self._error('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
        messages: list[dict[str, Any]] = body.get("messages", [])
        if self.mistral:
            for call_id in _request_call_ids(messages):
                kept = call_id[-9:]
                if not re.fullmatch(r"[a-zA-Z0-9]{9}", kept):
                    return self._preprocessing_error(
                        f"Tool call id was {kept} but must be a-z, A-Z, 0-9, with a length of 9."
                    )
        if self.strict_template:
            message = template_error(messages, self.strict_template)
            if message:
                return self._preprocessing_error(message)
        return None

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        if self.reasoning == "raw":
            reply = with_think_tags(reply)
        choice = self._tool_choice(body)
        parsed = choice == "auto" and self.auto_tool_choice and self.tool_parser is not None
        if parsed or choice in ("required", "named"):
            return reply
        return with_calls_as_text(reply, "mistral" if self.mistral else self.text_format)

    def wire(self) -> Wire:
        if self.mistral:
            ids = random_ids("", string.ascii_letters + string.digits, 9)
        else:
            ids = random_ids("chatcmpl-tool-", "0123456789abcdef", 32)
        field_name = "reasoning_content" if self.reasoning == "raw" else self.reasoning
        return Wire(call_id=ids, reasoning_field=field_name)

    @staticmethod
    def _tool_choice(body: dict[str, Any]) -> str:
        """The request's tool choice as vLLM reads it: "auto" when tools come without one."""
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            return "named"
        if choice is None:
            return "auto" if body.get("tools") else "none"
        return str(choice)

    def _error(self, message: str) -> Reply:
        info = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
        return Reply(status=400, error={"object": "error", **info} if self.error_format == "flat" else {"error": info})

    def _preprocessing_error(self, message: str) -> Reply:
        return self._error(f"{message} {message}" if self.error_format == "nested_doubled" else message)


def _request_call_ids(messages: list[dict[str, Any]]) -> Iterator[str]:
    for message in messages:
        if message.get("role") == "assistant":
            yield from (str(call.get("id")) for call in message.get("tool_calls") or [])
        elif message.get("role") == "tool":
            yield str(message.get("tool_call_id"))


@dataclass
class OllamaFlavour(Flavour):
    """Ollama's OpenAI-compatible endpoint, `/v1/chat/completions` (`openai/openai.go`,
    `middleware/openai.go`, `server/routes.go`).

    - `tools`: whether the model's template supports tools. Without, a request with tools is
      refused with 400 `{"error": {"message": "registry.ollama.ai/library/<model>:<tag> does not
      support tools", "type": "api_error", "param": null, "code": null}}` (`server/images.go`
      `CheckCapabilities`, `scheduleRunner` prefixes the full model name; the body as clients see
      it in louisho5/picobot#6 and ollama/ollama#5793: `type` is "api_error" there, although
      `NewError` in `openai/openai.go` reads as if a 400 gave "invalid_request_error").
    - `ids`: `"random"` is what `/v1` sends: `call_` and 8 lowercase letters or digits
      (`toolCallId` in `server/routes.go`). `"per_message"` (`call_0`, `call_1`, ... again in every
      message) and `"empty"` imitate what reaches a client from Ollama's native API, which had no
      ids at all before v0.12.10 (ollama/ollama#6708, #7510), through adapters that number calls
      per response (GEMISIS/leviath#470, tetsuo-ai/agenc-core#417).
    - `think`: `"reasoning"` (thinking-capable models: `message.thinking` becomes the `reasoning`
      field), `"tags"` (a model whose template does not declare thinking: `<think>...</think>` stays
      in `content`) or `"open_missing"` (a template that opens the thought in the prompt, so
      `content` starts inside it and only `</think>` shows; DeepSeek-R1 templates).

    Content is `""`, never null, next to tool calls; in a stream each tool call comes whole in one
    delta and the finish reason in its own empty-delta chunk (`ToStreamChunks`, `FinishChunk`);
    usage comes only with `stream_options.include_usage` (`ChatWriter.writeResponse`)."""

    tools: bool = True
    ids: Literal["random", "per_message", "empty"] = "random"
    think: Literal["reasoning", "tags", "open_missing"] = "reasoning"

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        if body.get("tools") and not self.tools:
            message = f"{ollama_model_name(str(body.get('model', '')))} does not support tools"
            return Reply(status=400, error=openai_error(message, type="api_error"))
        return None

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        if self.think != "reasoning":
            reply = with_think_tags(reply, opening=self.think == "tags")
        return replace(reply, content=reply.content or "")

    def wire(self) -> Wire:
        ids: CallIds
        if self.ids == "random":
            ids = random_ids("call_", string.ascii_lowercase + string.digits, 8)
        elif self.ids == "per_message":
            ids = _per_message_id
        else:
            ids = _empty_id
        return Wire(call_id=ids, reasoning_field="reasoning", whole_call_deltas=True)


def _per_message_id(number: int, index: int) -> str:
    return f"call_{index}"


def _empty_id(number: int, index: int) -> str:
    return ""


def ollama_model_name(model: str) -> str:
    """The full name Ollama puts in its errors: `gemma3` -> `registry.ollama.ai/library/gemma3:latest`."""
    name = model if ":" in model else f"{model}:latest"
    return f"registry.ollama.ai/{name}" if "/" in name else f"registry.ollama.ai/library/{name}"


@dataclass
class LlamaCppFlavour(Flavour):
    """llama.cpp's `llama-server` (`tools/server/server.cpp`, `tools/server/utils.hpp`).

    Errors raised while reading the request are `std::runtime_error`s, which the server answers
    with HTTP 500 `{"error": {"code": 500, "message": ..., "type": "server_error"}}` (the body
    clients report, e.g. the bodies quoted in ggml-org/llama.cpp#19851; the openai client retries
    500s, so tests give it `max_retries=0`).

    - `jinja`: `--jinja`. Without it, `tools` are refused: "tools param requires --jinja flag",
      and a `tool_choice` too: "Unsupported param: tool_choice" (`oaicompat_chat_params_parse` in
      `utils.hpp`, called `oaicompat_completion_params_parse` in early-2025 builds).
    - `tools_with_stream`: those early-2025 builds also refused tools in a streamed request:
      "Cannot use tools with stream" (the same function).
    - `text_format`: None when the template's format parser turns the model's calls into
      `tool_calls`; a format when the model writes them its own way and they stay in `content`
      (a fine-tune, or the generic parser not matching). Without `--jinja`, or when the request
      has no tools, calls are text too (`bare_json` unless a format is given).
    - `strict_template`: with `--jinja` the model's own template runs and raises on role order; the
      500's message carries the Jinja trace and ends "Error: Jinja Exception: <message>"
      (ggml-org/llama.cpp#19851, sipeed/picoclaw#207). The built-in templates used without
      `--jinja` do not check.
    - `reasoning_format`: `"deepseek"` (the default `--reasoning-format`: thoughts in
      `reasoning_content`) or `"none"` (left in `content` inside `<think>` tags).

    Generated tool call ids are 32 letters and digits (`gen_tool_call_id` in `utils.hpp`)."""

    jinja: bool = True
    tools_with_stream: bool = True
    text_format: TextFormat | None = None
    strict_template: TemplateStyle | None = None
    reasoning_format: Literal["deepseek", "none"] = "deepseek"

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        if body.get("tools"):
            if body.get("stream") and not self.tools_with_stream:
                return llamacpp_error("Cannot use tools with stream")
            if not self.jinja:
                return llamacpp_error("tools param requires --jinja flag")
        if not self.jinja and body.get("tool_choice") is not None:
            return llamacpp_error("Unsupported param: tool_choice")
        if self.jinja and self.strict_template:
            message = template_error(body.get("messages", []), self.strict_template)
            if message:
                return llamacpp_error(
                    "\n------------\nWhile executing CallExpression at line 1, column 32 in source:\n"
                    "...== 0) %}{{- raise_exception(...\n                ^\n"
                    f"Error: Jinja Exception: {message}"
                )
        return None

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        if self.reasoning_format == "none":
            reply = with_think_tags(reply)
        if self.jinja and body.get("tools") and self.text_format is None:
            return reply
        return with_calls_as_text(reply, self.text_format or "bare_json")

    def wire(self) -> Wire:
        return Wire(call_id=random_ids("", string.ascii_letters + string.digits, 32))


def llamacpp_error(message: str) -> Reply:
    return Reply(status=500, error={"error": {"code": 500, "message": message, "type": "server_error"}})


LITELLM_ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}
"""LiteLLM's exception per upstream status (`docs/my-website/docs/exception_mapping.md`)."""


@dataclass
class LiteLLMFlavour(Flavour):
    """The LiteLLM proxy in front of an `upstream` server: answers pass through, errors come back
    in LiteLLM's own body (`ProxyException` in `litellm/proxy/_types.py`):
    `{"error": {"message": "litellm.BadRequestError: OpenAIException - <upstream message>. Received
    Model Group=<model>\\nAvailable Model Group Fallbacks=None", "type": null, "param": null,
    "code": "400"}}`. The upstream's `type` and `param` are lost and `code` is the status as a
    string (BerriAI/litellm#8886 shows the body, #10083 and #18539 the message).

    - `provider`: the name LiteLLM gives the upstream in the message (`OpenAIException` for any
      OpenAI-compatible upstream).
    - `none_strings`: versions before BerriAI/litellm#39521 and #39536 (September 2026) sent
      `type` and `param` as the string "None".
    - `stream_usage`: where the usage goes in a stream asked for it: on the last choice chunk
      instead of a chunk with `choices: []` (BerriAI/litellm#8450, #28735), or `"omitted"` when the
      proxy does not forward it (BerriAI/litellm#5197, #8349)."""

    upstream: Flavour = field(default_factory=OpenAIFlavour)
    provider: str = "OpenAIException"
    none_strings: bool = False
    stream_usage: Literal["final_chunk", "on_last_choice", "omitted"] = "on_last_choice"

    def wrap(self, policy: Policy) -> Policy:
        upstream = self.upstream.wrap(policy)

        def proxied(body: dict[str, Any]) -> Reply:
            reply = upstream(body)
            return reply if reply.status == 200 else self._relay_error(body, reply)

        return proxied

    def wire(self) -> Wire:
        return replace(self.upstream.wire(), stream_usage=self.stream_usage)

    def _relay_error(self, body: dict[str, Any], reply: Reply) -> Reply:
        upstream_body: dict[str, Any] = reply.error or {"error": {"message": f"scripted {reply.status}"}}
        detail = upstream_body.get("error", upstream_body)
        message = detail.get("message") if isinstance(detail, dict) else None
        name = LITELLM_ERRORS.get(reply.status, "APIError")
        text = (
            f"litellm.{name}: {self.provider} - {message or json.dumps(upstream_body)}. "
            f"Received Model Group={body.get('model')}\nAvailable Model Group Fallbacks=None"
        )
        missing = "None" if self.none_strings else None
        error = {"error": {"message": text, "type": missing, "param": missing, "code": str(reply.status)}}
        return replace(reply, error=error)


ReActVariant = Literal["plain", "lowercase", "spaces", "fullwidth", "fenced", "chinese", "overrun"]


@dataclass
class ReActFlavour(Flavour):
    """A text model without function calling, prompted with the classic ReAct format. `tools` in
    the request are ignored: the model only knows what the prompt tells it.

    A scripted call is written as "Thought: ...\\nAction: <name>\\nAction Input: <JSON>" (one block
    per call), a scripted answer as "Thought: I now know the final answer\\nFinal Answer: ...";
    the Thought is the reply's `reasoning`, else its `content`. The keywords are those of Qwen's
    own ReAct prompt (`PROMPT_REACT` in QwenLM/Qwen-Agent `qwen_agent/agents/react_chat.py`: English
    keywords even for Chinese users, stop word "Observation:") and LangChain's. `variant`:

    - `plain`: exactly that.
    - `lowercase`: "thought:", "action:", "action input:", "final answer:".
    - `spaces`: spaces before the colon and around the values.
    - `fullwidth`: the full-width colon "：" that Chinese text uses.
    - `fenced`: the Action Input in a fenced json block.
    - `chinese`: "思考：", "行动：", "行动输入：", "最终答案：", the keywords of translated ReAct prompts
      (e.g. LangChain prompts rewritten in Chinese); Qwen's own prompt keeps English keywords.
    - `overrun`: the model writes past its Action Input into an Observation of its own and a
      next Thought, as when the server ignores the stop word (Qwen-Agent's `_detect_tool` handles
      the reverse, a missing "Observation:")."""

    variant: ReActVariant = "plain"

    def render(self, body: dict[str, Any], reply: Reply) -> Reply:
        chinese = self.variant == "chinese"
        thought, action, action_input, final = REACT_KEYWORDS.get(self.variant, REACT_KEYWORDS["plain"])

        def line(label: str, value: str) -> str:
            if self.variant == "spaces":
                return f"{label} :   {value}  "
            colon = "：" if self.variant in ("fullwidth", "chinese") else ": "
            return f"{label}{colon}{value}"

        if not reply.calls:
            done = reply.reasoning or ("我现在知道最终答案了" if chinese else "I now know the final answer")
            text = "\n".join([line(thought, done), line(final, reply.content or "")])
            return replace(reply, content=text, reasoning=None)
        blocks = []
        for call in reply.calls:
            arguments = _arguments_json(call)
            if self.variant == "fenced":
                arguments = f"\n```json\n{arguments}\n```"
            said = reply.reasoning or reply.content or f"I should call {call.name}."
            block = [line(thought, said), line(action, call.name), line(action_input, arguments)]
            if self.variant == "overrun":
                block += ["Observation: the logs show nothing unusual", "Thought: I now know the final answer"]
            blocks.append("\n".join(block))
        return replace(
            reply, content="\n".join(blocks), calls=[], reasoning=None, finish_reason=_text_finish_reason(reply)
        )


REACT_KEYWORDS = {
    "plain": ("Thought", "Action", "Action Input", "Final Answer"),
    "lowercase": ("thought", "action", "action input", "final answer"),
    "chinese": ("思考", "行动", "行动输入", "最终答案"),
}


Kind = Literal["openai", "vllm", "ollama", "llamacpp", "litellm", "react"]

FLAVOURS: dict[str, Callable[..., Flavour]] = {
    "openai": OpenAIFlavour,
    "vllm": VLLMFlavour,
    "ollama": OllamaFlavour,
    "llamacpp": LlamaCppFlavour,
    "litellm": LiteLLMFlavour,
    "react": ReActFlavour,
}


@contextmanager
def flavoured_server(kind: Kind | Flavour, *, script: Policy | Sequence[Reply], **quirks: Any) -> Iterator[ModelServer]:
    """A running server of that family answering with `script` (a policy, or replies in order).
    `quirks` are the flavour's switches, e.g. `flavoured_server("ollama", tools=False, script=...)`;
    pass a flavour instance instead of a kind to nest one (LiteLLM's `upstream`)."""
    if isinstance(kind, Flavour) and quirks:
        raise TypeError(f"quirks {sorted(quirks)} go to the flavour's constructor, not beside an instance")
    flavour = kind if isinstance(kind, Flavour) else FLAVOURS[kind](**quirks)
    with flavour.serve(script) as server:
        yield server
