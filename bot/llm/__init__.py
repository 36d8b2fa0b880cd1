"""The model, as servers really answer: model.py (Model, what the loop needs of one), client.py
(requests, errors, the endpoint's protocol), protocols.py (native, ReAct and JSON text),
textcalls.py (calls written as text), reasoning.py (thinking kept apart), shaping.py
(template-safe requests, unique call ids), streaming.py (replies in pieces, answer text as it
comes), turns.py (what a call comes to), health.py (whether the model can be used, watched),
harmony.py (gpt-oss's channels as text), fallback.py (other models while the configured one is down)."""

from .client import ModelClient
from .fallback import Fallbacks
from .health import NOT_CONFIGURED, ModelHealth, ModelState, ModelWatch
from .model import Model
from .protocols import Protocol
from .shaping import unique_ids
from .streaming import TextSink
from .turns import ModelTurn, ModelUnavailable, Usage

__all__ = [
    "NOT_CONFIGURED",
    "Fallbacks",
    "Model",
    "ModelClient",
    "ModelHealth",
    "ModelState",
    "ModelWatch",
    "ModelTurn",
    "ModelUnavailable",
    "Protocol",
    "TextSink",
    "Usage",
    "unique_ids",
]
