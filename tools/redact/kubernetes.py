"""Kubernetes shapes that span lines: an env entry whose secret's name is the `name` on the line
above its `value`, and the values of a Secret's `data` and `stringData` (base64 or plain), as
`kubectl get secret -o yaml|json` prints them and manifests hold them."""

from __future__ import annotations

import re

from tools.redact.keys import secret_key
from tools.redact.markers import Kind, harmless, marker
from tools.redact.pairs import QUOTE, SEPARATOR, VALUE, value_group

# Kubernetes env and ECS task definitions: `- name: DB_PASSWORD` then `value: x`, or one JSON object.
_ENV_PAIR = re.compile(
    rf"(?i)\b(?:name|key){SEPARATOR}{QUOTE}(?P<key>[\w.-]++){QUOTE}[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?"
    rf"{QUOTE}value{SEPARATOR}{VALUE}"
)
_ENV_REACH = 300  # how far before a `value` its `name` may be


def redact_env_pairs(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):
        return _ENV_PAIR.sub(_env_pair, text)
    pieces: list[str] = []
    done = 0
    at = lowered.find("value")
    while at != -1:
        match = _ENV_PAIR.search(text, max(done, at - _ENV_REACH), at + len("value") + 4_096)
        if match is not None and match.start() <= at < match.end():
            pieces += [text[done : match.start()], _env_pair(match)]
            done = match.end()
        at = lowered.find("value", max(done, at + 1))
    return "".join(pieces) + text[done:] if pieces else text


def _env_pair(match: re.Match[str]) -> str:
    group = value_group(match)
    if group is None or not secret_key(match.group("key")) or harmless(match.group(group)):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start()] + marker(Kind.secret_value)


# ---------------------------------------------------------------- Secret data

_YAML_KIND = re.compile(r"(?m)^[ \t-]*[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*\r?$")
_JSON_KIND = re.compile(r"\"kind\"[ \t]*:[ \t]*\"Secret\"")
_YAML_DATA = re.compile(r"(?m)^(?P<indent>[ \t]*)(?:data|stringData)[ \t]*:[ \t]*\r?$")
_YAML_ENTRY = re.compile(r"(?P<indent>[ \t]*)(?P<key>[^\s:#][^:\r\n]*?)[ \t]*:(?:[ \t]+(?P<value>[^\r\n]*?))?[ \t]*\r?")
_JSON_DATA = re.compile(r"\"(?:data|stringData)\"[ \t\r\n]*:[ \t\r\n]*\{")
_JSON_ENTRY = re.compile(r"(?P<key>\"(?:[^\"\\]|\\.)*\")[ \t\r\n]*:[ \t\r\n]*\"(?P<value>(?:[^\"\\\r\n]|\\.)*)\"")
_DOCUMENT_START = re.compile(r"(?m)(^---[^\n]*(?:\n|$))")
_SECRET = marker(Kind.kubernetes_secret)


def redact_secret_data(text: str) -> str:
    """Every value under `data:` / `stringData:` of a text that holds a Secret object."""
    if _JSON_KIND.search(text):
        text = _json_data(text)
    if not _YAML_KIND.search(text):
        return text
    # Each YAML document by itself: a ConfigMap beside the Secret keeps its data.
    documents = _DOCUMENT_START.split(text)
    return "".join(_yaml_data(part) if _YAML_KIND.search(part) else part for part in documents)


def _json_data(text: str) -> str:
    pieces: list[str] = []
    done = 0
    for data in _JSON_DATA.finditer(text):
        if data.start() < done:
            continue
        close = text.find("}", data.end())
        close = len(text) if close == -1 else close
        for entry in _JSON_ENTRY.finditer(text, data.end(), close):
            if harmless(entry.group("value")):
                continue
            pieces += [text[done : entry.start("value")], _SECRET]
            done = entry.end("value")
    return "".join(pieces) + text[done:] if pieces else text


def _yaml_data(text: str) -> str:
    lines = text.split("\n")
    changed = False
    index = 0
    while index < len(lines):
        data = _YAML_DATA.fullmatch(lines[index])
        index += 1
        if data is None:
            continue
        depth = len(data.group("indent"))
        item_depth: int | None = None
        while index < len(lines):
            line = lines[index]
            indent = len(line) - len(line.lstrip(" \t"))
            if line.strip() and indent <= depth:
                break
            masked = _masked_line(line, indent, item_depth)
            if masked is not None:
                lines[index], changed = masked, True
            entry = _YAML_ENTRY.fullmatch(line)
            if entry is not None and item_depth is None:
                item_depth = indent
            index += 1
    return "\n".join(lines) if changed else text


def _masked_line(line: str, indent: int, item_depth: int | None) -> str | None:
    """The line under `data:` with its value masked: `key: value` at the items' depth, or the
    whole line when deeper (the body of a `key: |` block)."""
    if not line.strip():
        return None
    if item_depth is not None and indent > item_depth:
        return line[:indent] + _SECRET
    entry = _YAML_ENTRY.fullmatch(line)
    if entry is None or entry.group("value") is None or harmless(entry.group("value")):
        return None
    return line[: entry.start("value")] + _SECRET + line[entry.end("value") :]
