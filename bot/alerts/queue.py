"""Accepted alerts, queued in Redis between the webhook and the workers.

`take` marks a delivery as seen and queues its alert in one step (a Lua script): a delivery is
queued once however often it is sent, and a failure queues nothing and marks nothing, so the
sender's retry is not mistaken for a duplicate. Workers move an alert to a processing list while
they handle it; what a dead worker left there is queued again when a process starts.
"""

from __future__ import annotations

import redis

from bot.alerts.models import Alert

_TAKE = """
for i = 2, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return 0 end
end
for i = 2, #KEYS do redis.call('set', KEYS[i], '1', 'EX', ARGV[2]) end
redis.call('rpush', KEYS[1], ARGV[1])
return 1
"""


class AlertQueue:
    def __init__(self, client: redis.Redis, prefix: str = "opsbot:alerts", seen_ttl_s: int = 7 * 24 * 3600) -> None:
        self.redis = client
        # One hash tag for every key, so the script works on Redis Cluster too.
        self.base = prefix + ":{alerts}"
        self.seen_ttl_s = seen_ttl_s
        self._take = client.register_script(_TAKE)

    def take(self, ids: list[str], alert: Alert) -> bool:
        """Queue `alert` unless one of `ids` was seen before; True when it was queued."""
        keys = [f"{self.base}:pending", *(f"{self.base}:seen:{i}" for i in ids)]
        return bool(self._take(keys=keys, args=[alert.model_dump_json(), self.seen_ttl_s]))

    def next(self, wait_s: int = 1) -> str | None:
        """The oldest queued alert, now marked as being handled; None after `wait_s` without one."""
        raw = self.redis.blmove(f"{self.base}:pending", f"{self.base}:processing", wait_s, "LEFT", "RIGHT")
        return str(raw) if raw is not None else None

    def done(self, raw: str) -> None:
        self.redis.lrem(f"{self.base}:processing", 1, raw)

    def give_back(self, raw: str) -> None:
        """Put an alert taken with `next` back at the head of the queue, unhandled."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(f"{self.base}:processing", 1, raw)
            pipe.lpush(f"{self.base}:pending", raw)
            pipe.execute()

    def requeue_unfinished(self) -> int:
        """Queue again what workers were handling when their process stopped."""
        moved = 0
        while self.redis.lmove(f"{self.base}:processing", f"{self.base}:pending", "RIGHT", "LEFT"):
            moved += 1
        return moved
