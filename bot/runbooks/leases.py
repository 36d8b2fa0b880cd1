"""Who may move a run on: the holder of its lease in the store, one token per operation.

A lease runs out by itself (`ttl_s`): a process that dies lets its runs go, and `recover` in
another takes them over. A process that holds one renews it while a step runs, so a slow command
or model never looks like a dead process.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ..approvals import Pending
from .errors import RunLost
from .store import RunStore, RunStoreUnavailable

log = logging.getLogger(__name__)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Leases:
    def __init__(self, store: RunStore, owner: str, ttl_s: float) -> None:
        self.store = store
        self.owner = owner
        self.ttl_s = ttl_s

    def token(self) -> str:
        # One token per operation: two threads of this process never share a lease.
        return f"{self.owner}:{uuid.uuid4().hex[:8]}"

    def token_for(self, pending: Pending) -> str:
        # One lease from `starting` to `resume` of one decision, however the service calls them.
        return f"{self.owner}:{pending.id}"

    def take(self, run_id: str, token: str) -> bool:
        return self.store.lease(run_id, token, self.ttl_s)

    def take_soon(self, run_id: str, token: str, wait_s: float = 5.0) -> bool:
        """The lease, waiting a moment for it: a person may click the moment a question is shown,
        while the run that asked it is still finishing its save and letting go."""
        deadline = time.monotonic() + wait_s
        while not self.take(run_id, token):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def keep(self, run_id: str, token: str, ttl_s: float | None = None) -> None:
        """Renewed (or taken again) for `ttl_s`; raises `RunLost` if another holds it now."""
        ttl = ttl_s if ttl_s is not None else self.ttl_s
        if not self.store.renew(run_id, token, ttl) and not self.store.lease(run_id, token, ttl):
            raise RunLost(run_id)

    @contextmanager
    def kept(self, run_id: str, token: str) -> Iterator[None]:
        """Renew the lease while a step runs: a slow command or model must not look like a dead
        process to another one's recover(), which would run the step again beside it."""
        done = threading.Event()

        def renew() -> None:
            while not done.wait(self.ttl_s / 3):
                try:
                    if not self.store.renew(run_id, token, self.ttl_s):
                        return  # lost (cancelled or taken over): the step's save will say so
                except RunStoreUnavailable as exc:
                    log.warning("could not renew the lease of run %s: %s", run_id, exc)

        keeper = threading.Thread(target=renew, name=f"lease-{run_id}", daemon=True)
        keeper.start()
        try:
            yield
        finally:
            done.set()
            keeper.join()

    def release(self, run_id: str, token: str) -> None:
        try:
            self.store.release(run_id, token)
        except RunStoreUnavailable as exc:
            log.warning("could not release the lease of run %s (it expires by itself): %s", run_id, exc)
