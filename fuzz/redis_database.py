"""`--database redis://...`: Hypothesis' RedisExampleDatabase, made to ride out a Redis restart.

Why a wrapper: a nightly campaign runs for many minutes on several machines sharing one Redis; if
Redis restarts meanwhile (a deploy, an OOM kill, a failover), RedisExampleDatabase raises
ConnectionError out of Hypothesis' save, the property dies as a harness error, and the failing
example it was about to save is gone. Here every operation retries with backoff for up to
`retry_seconds`; a write that still cannot land is kept and written with the next one that does,
and a read while Redis is away returns nothing (the campaign just does not replay, it is not
wrong). A Redis with persistence (AOF or RDB) then keeps everything the campaign found.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from hypothesis.database import ExampleDatabase

T = TypeVar("T")
DEFAULT_RETRY_SECONDS = 30.0


class ResilientRedisDatabase(ExampleDatabase):
    """An example database in Redis that survives the server restarting under it."""

    def __init__(self, url: str, *, retry_seconds: float = DEFAULT_RETRY_SECONDS) -> None:
        super().__init__()
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        self.url = url
        self.retry_seconds = retry_seconds
        self._errors: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError, OSError)
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=10)
        self._inner = RedisExampleDatabase(client)
        self._pending: list[tuple[str, tuple[bytes, ...]]] = []
        self._warned = False

    def __repr__(self) -> str:
        return f"ResilientRedisDatabase({self.url!r})"

    def ping(self) -> None:
        """Raise when Redis cannot be reached now (the campaign's start-up check)."""
        self._inner.redis.ping()

    def _retrying(self, action: Callable[[], T]) -> T:
        deadline = time.monotonic() + self.retry_seconds
        pause = 0.05
        while True:
            try:
                return action()
            except self._errors:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    def _write(self, op: str, *args: bytes) -> None:
        self._pending.append((op, args))
        try:
            self._retrying(self._flush)
        except self._errors as exc:
            if not self._warned:
                self._warned = True
                print(f"mcp-tempest: example database {self.url} unreachable ({exc}); "
                      f"keeping {len(self._pending)} write(s) until it is back", file=sys.stderr)

    def _flush(self) -> None:
        while self._pending:
            op, args = self._pending[0]
            getattr(self._inner, op)(*args)
            self._pending.pop(0)
        self._warned = False

    def fetch(self, key: bytes) -> Iterable[bytes]:
        try:
            if self._pending:
                self._retrying(self._flush)
            return self._retrying(lambda: list(self._inner.fetch(key)))
        except self._errors:
            return []

    def save(self, key: bytes, value: bytes) -> None:
        self._write("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._write("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._write("move", src, dest, value)

    @property
    def pending(self) -> int:
        """Writes still waiting for Redis (0 once everything landed)."""
        return len(self._pending)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ResilientRedisDatabase) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)
