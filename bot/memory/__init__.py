"""Thread memory: the window of blocks, the running summary, repeat counters and a run lock;
in process (base.py) or in Redis (redis.py, imported only where Redis is used)."""

from .base import InProcessMemory, Memory, MemoryUnavailable, ThreadBusy, ThreadState, first_turn_start

__all__ = ["InProcessMemory", "Memory", "MemoryUnavailable", "ThreadBusy", "ThreadState", "first_turn_start"]
