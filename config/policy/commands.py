"""Diagnostic commands the model may run, by name, with typed parameters.

The format, one entry under `policy.commands`:

```yaml
journal:
  description: recent journal lines of one unit
  argv: [journalctl, --no-pager, -u, "{unit}", "--since={since}", -n, "{lines}"]
  params:
    unit:  {enum: [nginx.service, postgresql.service]}
    since: {pattern: "-?[0-9]{1,3}(min|h|d)", allow_dash: true, default: "-1h"}
    lines: {min: 1, max: 500, default: 100}
  timeout_s: 10              # killed whole (process group) after this
  max_output_bytes: 64000    # head and tail kept, the cut stated
  env: {SYSTEMD_COLORS: "0"} # added to the minimal environment; fixed text, never a slot
  risk: read                 # write: never run by the model, only after approval
  access: {groups: [oncall]} # who may run it (users, groups, channels; empty = anyone)
  limits: {cpu_s: 5, memory_bytes: 512MiB}   # via prlimit(1)
  run_as: nobody             # opsbot must run as root to switch
```

For `risk: write` also: `approvers` (an Access; default: `access`), `self_approval` (default
false: the asker cannot approve their own request) and `approval_ttl_s` (default 900).
Executables without a slash are looked up on a fixed system PATH when the tool is built; a
relative path with a slash is relative to the YAML file.

Template rules, checked when the file is loaded:
- An argv element that is exactly `{name}` is a slot and becomes exactly one argv element. So is
  `--long-option={name}`: the fixed `--name=` prefix makes the whole element one option with its
  value attached, which no value can turn into another option. Any other slot inside a larger
  string (`x{a}`, `echo {a}`, `-u{unit}`) is refused: one rule that is easy to check beats quoting
  rules that are easy to get wrong. Other braces (`{print $1}`, `{{.Names}}`) are literal.
- The executable (`argv[0]`) is fixed. Every slot has a parameter and every parameter a slot.
- A whole slot is either an option's argument (directly after an element starting with `-`, like
  `-u {unit}`) or comes after an end-of-options marker the author writes (`--`, or git's
  `--end-of-options`). opsbot never inserts `--` itself: only the author knows whether `-h` takes
  an argument, and some programs (`git log ref -- path`) give `--` another meaning.
- Values starting with `-` are refused, always, unless the parameter says `allow_dash: true`, and
  that is only accepted where a value cannot be read as an option: attached to a long option,
  `--since={since}`. A separate slot is refused with `allow_dash` wherever it stands: opsbot
  cannot tell whether the element before it takes a value (`[git, log, --oneline, "{ref}"]` would
  run `--output=/x` as an option and write a file), `git log --author --help` prints help even
  though `--author` takes one, and `find -- {path}` runs `-delete` as a predicate despite the `--`.
  A program with only short options (`grep -e`) usually has a long form (`--regexp={pattern}`).
- The parameter type is the author's to choose: a slot that a program reads as code (`sh -c {cmd}`,
  `awk {program}`) runs whatever the pattern admits, so such a slot wants an `enum`.
- Values never contain control characters, C0 (NUL, tab, CR, LF, ESC, ...), DEL or C1 (U+0080 to
  U+009F: NEL is a line break to some programs, CSI starts a terminal sequence), are never empty
  and are at most `MAX_VALUE_CHARS` long (which also bounds the cost of matching a pattern).
  Template elements never contain them either.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

from pydantic import ByteSize, Field, StringConstraints, ValidationInfo, field_validator, model_validator

from .base import Access, Strict, absolute

MAX_VALUE_CHARS = 1024
END_OF_OPTIONS = frozenset({"--", "--end-of-options"})

ParamName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,62}$")]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
UserName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_.-]{0,31}\$?$")]

_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_ATTACHED = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9_.-]*=)\{([a-z_][a-z0-9_]*)\}")
# C0, DEL and C1. One rule for every value a model or a person hands to a tool (command values,
# config paths): none of these has a place in an argument or a file name, and each can end a line
# or start a terminal escape sequence somewhere.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# Environment variables that would turn a pager, or code from outside the command, back on.
_PROTECTED_ENV = frozenset({"PAGER", "GIT_PAGER", "SYSTEMD_PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE"})


class Slot(NamedTuple):
    position: int  # in argv
    name: str  # the parameter
    prefix: str  # "" for a whole slot, "--since=" for an attached one


def control_character(text: str) -> str | None:
    """The first control character in `text`, spelled for a message (`U+0085`), or None."""
    found = _CONTROL.search(text)
    return None if found is None else f"U+{ord(found.group(0)):04X}"


def _control_phrase(found: str) -> str:
    return f"contains a control character ({found}; NUL, tab, CR, LF, ESC and U+0080-U+009F are never accepted)"


def slot_of(element: str, index: int = 0) -> Slot | None:
    """The slot `element` is: a whole one (`{unit}`) or one attached to a long option
    (`--since={since}`); None for a fixed argument."""
    if whole := _SLOT.fullmatch(element):
        return Slot(index, whole.group(1), "")
    if attached := _ATTACHED.fullmatch(element):
        return Slot(index, attached.group(2), attached.group(1))
    return None


class Parameter(Strict):
    """One typed value the model may fill in: exactly one of `enum`, `pattern`, or `min`+`max`."""

    description: str = ""
    enum: tuple[str, ...] | None = Field(default=None, min_length=1, description="the only values accepted")
    pattern: str | None = Field(default=None, description="a regular expression the whole value must match")
    min: int | None = Field(default=None, description="an integer, at least this")
    max: int | None = Field(default=None, description="an integer, at most this")
    default: str | int | None = Field(default=None, description="used when the value is not given")
    allow_dash: bool = Field(default=False, description="accept values starting with '-' (option values only)")

    @property
    def kind(self) -> Literal["enum", "pattern", "int"]:
        if self.enum is not None:
            return "enum"
        return "pattern" if self.pattern is not None else "int"

    @property
    def required(self) -> bool:
        return self.default is None

    @model_validator(mode="after")
    def _one_kind_and_a_valid_default(self) -> Parameter:
        kinds = [self.enum is not None, self.pattern is not None, self.min is not None or self.max is not None]
        if sum(kinds) != 1:
            raise ValueError("give exactly one of: enum (a list), pattern (a regex), or min and max (an integer range)")
        if self.kind == "pattern":
            _compile(self.pattern or "")
        if self.kind == "int":
            self._check_range()
        for value in self.enum or ():
            self._check_enum_value(value)
        if self.default is not None:
            self.check(self.default)
        return self

    def _check_range(self) -> None:
        if self.min is None or self.max is None:
            raise ValueError("an integer parameter needs both min and max")
        if self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        if self.min < 0 and not self.allow_dash:
            raise ValueError("min is negative, but negative values start with '-': set allow_dash: true or min >= 0")

    def _check_enum_value(self, value: str) -> None:
        if not value:
            raise ValueError("an enum value is empty")
        if found := control_character(value):
            raise ValueError(f"enum value {value!r} {_control_phrase(found)}")
        if value.startswith("-") and not self.allow_dash:
            raise ValueError(f"enum value {value!r} starts with '-': set allow_dash: true if it is meant that way")

    def check(self, value: object) -> str:
        """The value as the one argv element it becomes; ValueError saying why it is refused."""
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ValueError(f"must be a string or an integer, not {type(value).__name__}")
        text = str(value)
        if len(text) > MAX_VALUE_CHARS:
            raise ValueError(f"is {len(text):,} characters long; at most {MAX_VALUE_CHARS:,} are accepted")
        if not text:
            raise ValueError("is empty")
        if found := control_character(text):
            raise ValueError(_control_phrase(found))
        if text.startswith("-") and not self.allow_dash:
            raise ValueError("starts with '-', which a program could read as an option")
        return self._typed(text)

    def _typed(self, text: str) -> str:
        if self.kind == "enum":
            if text not in (self.enum or ()):
                raise ValueError(f"{text!r} is not one of the allowed values")
            return text
        if self.kind == "pattern":
            if not _compile(self.pattern or "").fullmatch(text):
                raise ValueError(f"{text!r} does not match the pattern {self.pattern}")
            return text
        return self._integer(text)

    def _integer(self, text: str) -> str:
        if not _INTEGER.fullmatch(text):
            raise ValueError(f"{text!r} is not an integer")
        number = int(text)
        low, high = self.min, self.max
        if low is None or high is None or not low <= number <= high:
            raise ValueError(f"{number} is outside {low}..{high}")
        return str(number)

    def expects(self) -> str:
        """What a valid value looks like, for hints."""
        if self.kind == "enum":
            shown = ", ".join(self.enum or ())
            text = f"one of {shown}"
        elif self.kind == "pattern":
            text = f"text matching {self.pattern}"
        else:
            text = f"an integer from {self.min} to {self.max}"
        return text if self.default is None else f"{text}; default {self.default}"


class Checked(NamedTuple):
    """Every parameter's checked value, defaults filled in, and every problem, one phrase each."""

    values: dict[str, str]
    problems: list[str]


def check_values(params: Mapping[str, Parameter], given: Mapping[str, object]) -> Checked:
    """Every parameter's checked value, defaults filled in, and every problem, one phrase each
    (for a command's parameters and a runbook's alike)."""
    problems = [f"unknown parameter {key!r}" for key in given if key not in params]
    values: dict[str, str] = {}
    for key, param in params.items():
        value = given.get(key, param.default)
        if value is None:
            problems.append(f"missing parameter {key!r} ({param.expects()})")
            continue
        try:
            values[key] = param.check(value)
        except ValueError as exc:
            problems.append(f"parameter {key!r} {exc}")
    return Checked(values, problems)


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from exc


class ResourceLimits(Strict):
    """Kernel limits for the command's process (prlimit(1)); exceeding them kills or fails it."""

    cpu_s: int | None = Field(default=None, ge=1, le=3600, description="CPU seconds (RLIMIT_CPU)")
    memory_bytes: ByteSize | None = Field(
        default=None, ge=16 * 1024 * 1024, description="address space, e.g. 512MiB (RLIMIT_AS)"
    )


class Command(Strict):
    description: str
    # `params` comes before `argv` so that argv's validator can check the slots against it.
    params: dict[ParamName, Parameter] = Field(default_factory=dict, description="typed values for the slots")
    argv: list[str] = Field(min_length=1, description="argv template; no shell; `{name}` elements are slots")
    timeout_s: float = Field(default=10.0, gt=0, le=300)
    max_output_bytes: int = Field(default=64_000, gt=0, le=10_000_000)
    env: dict[EnvName, str] = Field(default_factory=dict, description="added to the minimal environment")
    risk: Literal["read", "write"] = "read"
    access: Access = Field(default_factory=Access, description="who may run it (or ask for it, when risk is write)")
    approvers: Access | None = Field(default=None, description="who may approve a write; default: `access`")
    self_approval: bool = Field(default=False, description="whether the asker may approve their own request")
    approval_ttl_s: float = Field(default=900, gt=0, le=86_400, description="how long an approval request is valid")
    limits: ResourceLimits | None = None
    run_as: UserName | None = Field(default=None, description="run as this OS user (opsbot must run as root)")

    @field_validator("argv")
    @classmethod
    def _valid_template(cls, argv: list[str], info: ValidationInfo) -> list[str]:
        for element in argv:
            _check_element(element)
        if slot_of(argv[0]) is not None:
            raise ValueError("the executable (the first element) must be fixed, not a slot")
        params = info.data.get("params")
        if params is not None:  # None when params itself was invalid: that error is reported already
            _check_slots(argv, params)
        return argv

    @field_validator("env")
    @classmethod
    def _safe_env(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if name in _PROTECTED_ENV or name.startswith("LD_"):
                raise ValueError(f"{name} cannot be set: pagers stay off and the loader is not configurable")
            if "\x00" in value:
                raise ValueError(f"the value of {name} contains NUL")
        return env

    @property
    def deciders(self) -> Access:
        """Who may approve (or deny) a request to run it: `approvers`, or else whoever may run it."""
        return self.approvers if self.approvers is not None else self.access

    def slots(self) -> list[Slot]:
        """Every slot, in argv order."""
        return [slot for i, element in enumerate(self.argv) if (slot := slot_of(element, i)) is not None]

    def summary(self) -> str:
        """One line for listings: the description, the parameters, and whether it needs approval."""
        parts = [self.description]
        if self.params:
            parts.append("params: " + "; ".join(f"{n} ({p.expects()})" for n, p in self.params.items()))
        if self.risk == "write":
            parts.append("changes things: needs a person's approval before it runs")
        return " — ".join(parts)

    def resolved(self, base: Path) -> Command:
        """A relative executable path (`scripts/check.sh`) made absolute against `base`; a bare name
        (`df`) is looked up on a fixed system PATH when the run_command tool is built."""
        program = self.argv[0]
        if "/" not in program or Path(program).is_absolute():
            return self
        return self.model_copy(update={"argv": [str(absolute(Path(program), base)), *self.argv[1:]]})


def _check_element(element: str) -> None:
    if found := control_character(element):
        raise ValueError(f"argument {element!r} {_control_phrase(found)}")
    embedded = _SLOT.search(element)
    if embedded and slot_of(element) is None:
        raise ValueError(
            f"argument {element!r} has the slot {embedded.group(0)} inside a larger string; a slot must be a "
            f"whole argument ('{embedded.group(0)}') or the value of a long option ('--name={embedded.group(0)}')"
        )


def _check_slots(argv: list[str], params: dict[str, Parameter]) -> None:
    used: set[str] = set()
    after_end = False
    for index, element in enumerate(argv[1:], start=1):
        slot = slot_of(element, index)
        if slot is None:
            after_end = after_end or element in END_OF_OPTIONS
            continue
        if slot.name not in params:
            raise ValueError(f"slot {element} has no parameter; declared: {', '.join(sorted(params)) or 'none'}")
        used.add(slot.name)
        if not slot.prefix:  # an attached value cannot be read as an option: it is inside one
            _check_position(element, params[slot.name], _takes_argument(argv[index - 1]), after_end)
    unused = sorted(set(params) - used)
    if unused:
        raise ValueError(f"parameter(s) {', '.join(unused)} have no slot in argv")


def _takes_argument(element: str) -> bool:
    """Whether `element` looks like an option whose argument is the next element. `-`, the end
    markers and `--name=value` (which carries its own value) do not."""
    if element in END_OF_OPTIONS or len(element) < 2 or not element.startswith("-"):
        return False
    return not (element.startswith("--") and "=" in element)


def _check_position(element: str, param: Parameter, option_argument: bool, after_end: bool) -> None:
    if not option_argument and not after_end:
        raise ValueError(
            f"slot {element} would be a positional argument before any end of options: put '--' (or git's "
            f"'--end-of-options') before it, or make it the argument of an option such as [-u, '{element}']"
        )
    if param.allow_dash:
        raise ValueError(
            f"slot {element} allows values starting with '-' but is a separate argument, where such a value "
            f"can be read as an option (after a flag that takes no value, '--output=/x' is one); allow_dash "
            f"needs the value attached to a long option, such as '--since={element}'"
        )
