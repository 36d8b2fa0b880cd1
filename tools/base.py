"""The tool contract: a tool is a name, a description, a pydantic argument model and a function.

Tools never raise to their caller and never speak to the model: they return a `ToolResult`,
and the executor turns anything unexpected into one too.
"""

from __future__ import annotations

import inspect
import json
import threading
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..config.policy import Principal
from .text import cut_middle


class ErrorType(StrEnum):
    invalid_args = "invalid_args"
    unknown_tool = "unknown_tool"
    not_found = "not_found"
    denied = "denied"
    needs_approval = "needs_approval"
    timeout = "timeout"
    unavailable = "unavailable"
    failed = "failed"
    repeated_call = "repeated_call"
    cancelled = "cancelled"  # the user gave up the question while the call ran


class CallStatus(StrEnum):
    """What a call came to in one word, as a step log and a progress line show it: `ok`, or the
    type of its error (every `ErrorType` has its member here, by the same value)."""

    ok = "ok"
    invalid_args = "invalid_args"
    unknown_tool = "unknown_tool"
    not_found = "not_found"
    denied = "denied"
    needs_approval = "needs_approval"
    timeout = "timeout"
    unavailable = "unavailable"
    failed = "failed"
    repeated_call = "repeated_call"
    cancelled = "cancelled"


class ToolError(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: ErrorType
    message: str
    hint: str = ""
    retryable: bool = False


class ToolResult(BaseModel):
    """What a tool call came to. Rendered to the model as one compact JSON string."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    data: Any = None
    error: ToolError | None = None
    truncated: str | None = Field(default=None, description="what was cut, when something was")
    # What a tool keeps for people beside its data and never renders to the model: the points of a
    # metrics range, for a chart. Numbers only, so redaction has nothing to look at.
    kept: Any = Field(default=None, exclude=True)

    @classmethod
    def success(cls, data: Any) -> ToolResult:
        return cls(ok=True, data=data)

    @classmethod
    def failure(
        cls, type: ErrorType, message: str, hint: str = "", retryable: bool = False, data: Any = None
    ) -> ToolResult:
        return cls(ok=False, data=data, error=ToolError(type=type, message=message, hint=hint, retryable=retryable))

    @classmethod
    def unknown(cls, kind: str, name: str, known: Iterable[str]) -> ToolResult:
        """`not_found` for a name the policy does not declare, listing the names it does."""
        return cls.failure(
            ErrorType.not_found, f"unknown {kind} {name!r}", hint=f"known {kind}s: {', '.join(sorted(known)) or 'none'}"
        )

    @property
    def status(self) -> CallStatus:
        return CallStatus.ok if self.error is None else CallStatus(self.error.type.value)

    def render(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), separators=(",", ":"), ensure_ascii=False)

    def capped(self, max_chars: int) -> ToolResult:
        """This result with its data cut in the middle so that it renders within `max_chars`.

        Head and tail are kept (the newest log lines are usually last) and the cut is stated in
        `truncated`, so the model knows it did not see everything. In a dict, only the longest
        string value is cut, so the other fields keep their shape.
        """
        if len(self.render()) <= max_chars:
            return self
        field = _longest_string_field(self.data)
        if field is not None:
            text = self.data[field]
        else:
            text = self.data if isinstance(self.data, str) else json.dumps(self.data, ensure_ascii=False)
        keep = min(len(text), max_chars)
        while keep > 0:
            candidate = self._cut(text, keep, field)
            size = len(candidate.render())
            if size <= max_chars:
                return candidate
            # JSON escaping makes the rendered size differ from the kept characters: shrink in proportion.
            keep = min(keep - 1, keep * max_chars // size)
        return self._cut(text, 0, None)

    def _cut(self, text: str, keep: int, field: str | None) -> ToolResult:
        short = cut_middle(text, keep, head_share=0.4)
        where = f"{field!r} " if field else "output "
        note = (
            f"{where}was {len(text):,} characters; {short.cut:,} cut from the middle "
            f"(first {short.head:,} and last {short.tail:,} kept). Narrow the query to see the rest."
        )
        data = {**self.data, field: short.text} if field is not None else short.text
        return self.model_copy(update={"data": data, "truncated": note})


BRIEF_CHARS = 160


def brief(result: ToolResult, tool: Tool[Any] | None) -> str:
    """What a call found, in one line after its status: the tool's own words for its data
    ("37 matching lines, showing the last 20"), or the error's message ("you may not read the
    logs of payments"); "" when the tool has no words for it. Built from the redacted result, so
    it says nothing the model could not see."""
    if result.error is not None:
        text = result.error.message
    elif tool is not None and tool.summarize is not None:
        text = tool.summarize(result.data)
    else:
        text = ""
    if result.truncated:
        text += " (cut to fit)" if text else "cut to fit"
    line = " ".join(text.split())
    return line if len(line) <= BRIEF_CHARS else line[: BRIEF_CHARS - 1] + "…"


def _longest_string_field(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    strings = [(len(v), k) for k, v in data.items() if isinstance(v, str)]
    return max(strings)[1] if strings else None


ArgsT = TypeVar("ArgsT", bound=BaseModel)

# A tool function gets its validated arguments and who asked (None when nobody in particular did).
ToolFunction = Callable[[ArgsT, Principal | None], Any]


@dataclass(frozen=True)
class Tool(Generic[ArgsT]):
    """A tool over its own argument model: `run` is handed an instance of `args_model`, nothing looser."""

    name: str
    description: str
    _: KW_ONLY
    args_model: type[ArgsT]
    run: ToolFunction[ArgsT]
    # A tool that enforces its own deadline (a subprocess killed on timeout) says how long the
    # executor should wait for it; otherwise the executor's timeout applies, and it would retry
    # a call whose first attempt is still running.
    timeout_s: float | None = None
    # What a successful call found, in a few words for a person watching the steps ("exit 0,
    # 3 lines"); it is given the result's (redacted) data. Without it a step says "ok".
    summarize: Callable[[Any], str] | None = None
    # The whole of a successful call's data for a person who asked for it by name (a direct
    # command): what they need, in their words, without the fields the model needs or the
    # asking repeated. Without it the data is shown field by field.
    show: Callable[[Any], str] | None = None

    def schema(self) -> dict[str, Any]:
        """The chat-completions `tools=` entry, generated from the argument model."""
        parameters = self.args_model.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


def from_function(func: Callable[..., Any], name: str | None = None) -> Tool[BaseModel]:
    """A plain, type-hinted Python function as a tool: its docstring describes it to the model,
    its parameters become the argument model (defaults kept), its return value the data."""
    signature = inspect.signature(func)
    hints = _parameter_hints(func)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{func.__name__}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(f"{func.__name__}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    tool_name = name or func.__name__
    model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)

    def run(args: BaseModel, principal: Principal | None) -> Any:
        return func(**{field: getattr(args, field) for field in fields})

    return Tool(name=tool_name, description=inspect.cleandoc(func.__doc__ or tool_name), args_model=model, run=run)


def _parameter_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """Resolved parameter annotations. The return annotation is left out: it may name a class
    local to the caller, which cannot be resolved, and the tool contract does not need it."""
    annotations = {k: v for k, v in inspect.get_annotations(func).items() if k != "return"}
    probe = types.SimpleNamespace(__annotations__=annotations, __globals__=getattr(func, "__globals__", {}))
    return typing.get_type_hints(probe, globalns=probe.__globals__)


# Tools known only once asked for: given the name looked up (None: the whole set), the tools not
# given before that it may need; each tool is given once.
Later = Callable[[str | None], Iterable["Tool[Any]"]]


class Registry:
    """The tools one agent may call, by name. `later` gives tools known only once asked for (an
    MCP server's, as the server lists them): asked when a name the others lack is looked up (for
    that name: one server's tools), and once for the rest when the whole set is needed, so a
    direct command by a known name never calls it."""

    def __init__(self, tools: Iterable[Tool[Any] | Callable[..., Any]] = (), later: Later | None = None) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for item in tools:
            self.add(item)
        self._later = later
        self._lock = threading.Lock()

    def _complete(self, name: str | None = None) -> None:
        with self._lock:
            later = self._later
            if later is None:
                return
            if name is None:
                self._later = None
            for item in later(name):
                self.add(item)

    def add(self, item: Tool[Any] | Callable[..., Any]) -> Tool[Any]:
        entry = item if isinstance(item, Tool) else from_function(item)
        if entry.name in self._tools:
            raise ValueError(f"two tools are named {entry.name!r}")
        self._tools[entry.name] = entry
        return entry

    def get(self, name: str) -> Tool[Any] | None:
        if name not in self._tools:
            self._complete(name)
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        self._complete()
        return sorted(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [self._tools[name].schema() for name in self.names]

    def __iter__(self) -> Iterator[Tool[Any]]:
        self._complete()
        return iter(self._tools.values())

    def __len__(self) -> int:
        self._complete()
        return len(self._tools)
