"""The model, as servers really answer: model.py (Model, what the loop needs of one), client.py
(requests, errors, the endpoint's protocol), protocols.py (native, ReAct and JSON text),
textcalls.py (calls written as text), reasoning.py (thinking kept apart), shaping.py
(template-safe requests, unique call ids), streaming.py (replies in pieces, answer text as it
comes), turns.py (what a call comes to)."""

from bot.llm.client import ModelClient
from bot.llm.model import Model
from bot.llm.protocols import Protocol
from bot.llm.shaping import unique_ids
from bot.llm.streaming import TextSink
from bot.llm.turns import ModelTurn, ModelUnavailable, Usage

__all__ = [
    "Model",
    "ModelClient",
    "ModelTurn",
    "ModelUnavailable",
    "Protocol",
    "TextSink",
    "Usage",
    "unique_ids",
]
