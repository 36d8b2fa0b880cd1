"""A Secret's `data` and `stringData` in YAML text: manifests, `kubectl get secret -o yaml`,
several documents (`---`), the items of a `kind: List`.

YAML's own parser cannot be used: the text is often no whole document (a command's output with
its prompt, a log block, a file cut at a cap). Lines are read for their layout instead, in one
pass: which mapping each key belongs to (its column, a `- ` opening a list item's mapping), so
`data:` is hidden only in a mapping that also says `kind: Secret`, wherever that line stands in
it, and a ConfigMap's data beside it stays readable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .markers import Kind, marker, markers_only

SECRET = marker(Kind.kubernetes_secret)

_LEAD = re.compile(r"[ \t]*+(?:-[ \t]++)*+")  # indentation, and the dashes of list items, before a key
_KIND_SECRET = re.compile(r"[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*(?:#.*)?\r?")
_DATA = re.compile(r"[\"']?(?:data|stringData)[\"']?[ \t]*:(?P<rest>(?:[ \t].*)?)\r?")
_DOCUMENT_MARK = re.compile(r"(?:---|\.\.\.)(?:[ \t].*)?\r?")
_ENTRY = re.compile(r"[^\s:#][^:\r\n]*+:(?:[ \t]++(?P<value>[^\r\n]*+))?")  # `key:`, and what follows
# `data: {DB: eHl6, "host": "ZGI="}`: a flow mapping's entries, each value to its comma or brace. A
# key starts after `{`, `,` or a blank and holds none, so no run of text is read twice.
_FLOW_ENTRY = re.compile(
    r"(?<=[{,\s])(?P<key>\"(?:[^\"\\\n]|\\.)*+\"|'[^'\n]*+'|[^\s{},:\"'#][^\s{},:#]*+):[ \t]*"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*+\"|'[^'\n]*+'|[^\s{},\"'#][^{},\n]*+)"
)


def redact_data(text: str) -> str:
    lines = text.split("\n")
    data = _secret_data(lines)
    if not data:
        return text
    out: list[str] = []
    index = 0
    while index < len(lines):
        column = data.get(index)
        if column is None:
            out.append(lines[index])
            index += 1
            continue
        line = lines[index]
        end = _block_end(lines, index, column)
        found = _DATA.fullmatch(line, column)
        if found is not None and found.group("rest").lstrip().startswith("{"):
            rest = found.start("rest")
            out.append(line[:rest] + _masked_flow(line[rest:]))
            out += [_masked_flow(child) for child in lines[index + 1 : end]]
        else:
            out.append(line)
            out += _masked_entries(lines[index + 1 : end])
        index = end
    return "\n".join(out)


@dataclass
class _Mapping:
    column: int
    secret: bool = False
    data: list[tuple[int, int]] = field(default_factory=list)  # (line, column) of its data keys


def _secret_data(lines: list[str]) -> dict[int, int]:
    """The line and column of every `data:` / `stringData:` key whose mapping says `kind: Secret`."""
    found: dict[int, int] = {}
    open_: list[_Mapping] = []

    def close_past(column: int) -> None:
        while open_ and open_[-1].column > column:
            closed = open_.pop()
            if closed.secret:
                found.update(closed.data)

    for number, line in enumerate(lines):
        if _DOCUMENT_MARK.fullmatch(line):
            close_past(-1)
            continue
        lead = _LEAD.match(line)
        column = lead.end() if lead is not None else 0
        if column == len(line.rstrip("\r")) or line[column] == "#":
            continue  # blank, or a comment
        indent = len(line) - len(line.lstrip(" \t"))
        if indent < column:  # `- key: ...`: a list item opens a mapping of its own
            close_past(indent)
            open_.append(_Mapping(column))
        else:
            close_past(column)
            if not open_ or open_[-1].column != column:
                open_.append(_Mapping(column))
        mapping = open_[-1]
        if _KIND_SECRET.fullmatch(line, column):
            mapping.secret = True
        elif "ata" in line and _DATA.fullmatch(line, column):
            mapping.data.append((number, column))
    close_past(-1)
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_end(lines: list[str], index: int, column: int) -> int:
    """The line after the last one indented under `lines[index]`'s key (blank lines at the end
    belong to what follows)."""
    end = last = index + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > column):
        end += 1
        if lines[end - 1].strip():
            last = end
    return last


def _masked_flow(text: str) -> str:
    return _FLOW_ENTRY.sub(
        lambda entry: (
            entry.group(0)
            if markers_only(entry.group("value"))
            else entry.group(0)[: entry.start("value") - entry.start()] + SECRET
        ),
        text,
    )


def _masked_entries(children: list[str]) -> list[str]:
    """The lines under a block `data:` with every value hidden: each entry becomes `key: <marker>`
    on one line, whatever stood after its colon and on the lines below it (a block scalar's body,
    a plain scalar's continuation), so neither a value's length nor its number of lines is told."""
    out: list[str] = []
    depth = next((_indent(line) for line in children if line.strip()), 0)
    index = 0
    while index < len(children):
        line = children[index]
        index += 1
        if not line.strip():
            out.append(line)
            continue
        body_start = index
        while index < len(children) and (not children[index].strip() or _indent(children[index]) > depth):
            index += 1
        body = children[body_start:index]
        entry = _ENTRY.match(line, _indent(line)) if _indent(line) == depth else None
        value = (entry.group("value") or "") if entry is not None else line
        if markers_only(value) and all(markers_only(text) for text in body):
            out += [line, *body]  # nothing left to hide
            continue
        ending = "\r" if line.endswith("\r") else ""
        if entry is None:
            out.append(line[: _indent(line)] + SECRET + ending)
        else:
            key = line[: entry.start("value")] if entry.group("value") is not None else line[: entry.end()]
            out.append(f"{key.rstrip()} {SECRET}{ending}")
    return out
