"""Hypothesis helpers for "a real payload, slightly wrong": the deep checks of a parser are only
reached by documents that pass its shallow ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st


def one_value_swapped(draw: st.DrawFn, shape: Any, values: st.SearchStrategy[Any]) -> Any:
    """A copy of `shape` with one value, at a depth `draw` picks, replaced by one of `values`."""
    doc = json.loads(json.dumps(shape))
    node: Any = doc
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        key = draw(st.sampled_from(keys))
        child = node[key]
        if not isinstance(child, (dict, list)) or not child or draw(st.booleans()):
            node[key] = draw(values)
            break
        node = child
    return doc
