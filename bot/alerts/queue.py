"""Accepted alerts, queued in Redis between the webhook and the workers.

`take` marks a delivery as seen and queues its alert in one step (a Lua script): a delivery is
queued once however often it is sent, and a failure queues nothing and marks nothing, so the
sender's retry is not mistaken for a duplicate. A worker moves the alert it handles to its own
process's list; a process proves it is alive with a key it keeps refreshing, and what a process
that stopped refreshing left in its list goes back to the queue (`requeue_orphans`).
"""

from __future__ import annotations

from ..redis.client import RedisClient
from .models import Alert

_TAKE = """
for i = 2, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return 0 end
end
for i = 2, #KEYS do redis.call('set', KEYS[i], '1', 'EX', ARGV[2]) end
redis.call('rpush', KEYS[1], ARGV[1])
return 1
"""

ALIVE_TTL_S = 30


class AlertQueue:
    def __init__(
        self, client: RedisClient, owner: str, prefix: str = "opsbot:alerts", seen_ttl_s: int = 30 * 24 * 3600
    ) -> None:
        self.redis = client
        self.owner = owner
        # One hash tag for every key, so the script, the MULTI/EXEC in give_back and BLMOVE/LMOVE
        # (two keys each) work on Redis Cluster too.
        self.base = prefix + ":{alerts}"
        self.seen_ttl_s = seen_ttl_s
        self._take = client.register_script(_TAKE)

    def take(self, ids: list[str], alert: Alert) -> bool:
        """Queue `alert` unless one of `ids` was seen before; True when it was queued."""
        keys = [f"{self.base}:pending", *(f"{self.base}:seen:{i}" for i in ids)]
        return bool(self._take(keys=keys, args=[alert.model_dump_json(), self.seen_ttl_s]))

    def next(self, wait_s: float = 1.0) -> str | None:
        """The oldest queued alert, now this process's to handle; None after `wait_s` without one."""
        # Redis takes a fractional timeout (since 6.0); redis-py annotates it as int.
        raw = self.redis.blmove(f"{self.base}:pending", self._mine(), wait_s, "LEFT", "RIGHT")  # type: ignore[arg-type]
        return str(raw) if raw is not None else None

    def done(self, raw: str) -> None:
        self.redis.lrem(self._mine(), 1, raw)

    def give_back(self, raw: str) -> None:
        """Put an alert this process could not handle (now) at the end of the queue."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self._mine(), 1, raw)
            pipe.rpush(f"{self.base}:pending", raw)
            pipe.execute()

    def alive(self) -> None:
        """Say this process still works on what it took; call more often than ALIVE_TTL_S."""
        self.redis.set(f"{self.base}:alive:{self.owner}", "1", ex=ALIVE_TTL_S)

    def requeue_orphans(self) -> int:
        """Queue again what processes that stopped (no alive key) were handling."""
        moved = 0
        start = f"{self.base}:processing:"
        for key in list(self.redis.scan_iter(start + "*", count=100)):
            owner = str(key).removeprefix(start)
            if owner == self.owner or self.redis.exists(f"{self.base}:alive:{owner}"):
                continue
            while self.redis.lmove(str(key), f"{self.base}:pending", "RIGHT", "LEFT"):
                moved += 1
        return moved

    def _mine(self) -> str:
        return f"{self.base}:processing:{self.owner}"
