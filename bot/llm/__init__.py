"""The model, as servers really answer: model.py (Model, what the loop needs of one), client.py
(requests, errors, the endpoint's protocol), protocols.py (native, ReAct and JSON text),
textcalls.py (calls written as text), reasoning.py (thinking kept apart), shaping.py
(template-safe requests, unique call ids), streaming.py (replies in pieces, answer text as it
comes), turns.py (what a call comes to), probe.py (does the endpoint serve the model)."""

from .client import ModelClient
from .health import NOT_CONFIGURED, ModelHealth, ModelState, ModelWatch
from .model import Model
from .probe import ModelCheck, Verdict, check_model
from .protocols import Protocol
from .shaping import unique_ids
from .streaming import TextSink
from .turns import ModelTurn, ModelUnavailable, Usage

__all__ = [
    "NOT_CONFIGURED",
    "Model",
    "ModelCheck",
    "ModelClient",
    "ModelHealth",
    "ModelState",
    "ModelWatch",
    "ModelTurn",
    "ModelUnavailable",
    "Protocol",
    "TextSink",
    "Usage",
    "Verdict",
    "check_model",
    "unique_ids",
]
