"""From a target spec to a live Connection, with whatever keeps that cheap behind it.

`Target` owns the pools of one target for a whole run (the next fresh stdio process already
started; the `http+spawn:` instances), so callers ask for connections per case and never think
about processes. `open_target` is the one-call form for code that has no run-long object.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Mapping
from typing import Final

from mcp_tempest.targets.connection import DEFAULT_LINE_CAP, DEFAULT_TIMEOUT, Connection
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.processes import SpawnError
from mcp_tempest.targets.spawn_pool import DEFAULT_READY_TIMEOUT, SpawnPool
from mcp_tempest.targets.stdio_driver import DEFAULT_CLOSE_GRACE, StdioConnection, StdioPool
from mcp_tempest.targets.target_spec import TargetError, TargetSpec, parse_target
from mcp_tempest.targets.transcript import Transcript

DEFAULT_PRESTART: Final = 1


class Target:
    """One target for the length of a run.

    - stdio: `connect(fresh=True)` is a new process, taken from a StdioPool that keeps
      `prestart` spares running; `fresh=False` reuses one shared process (rebound to the new
      transcript, its `close()` only detaches; it is replaced when it dies).
    - http: every connection talks to the running endpoint; `fresh` has no effect there.
    - http+spawn: `instances` processes started on first use, shared by all connections
      (round-robin or `instance=`); `fresh` has no effect (use `pool.restart(i)`).
    """

    def __init__(
        self,
        spec: TargetSpec | str | None,
        *,
        allow_remote: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        line_cap: int = DEFAULT_LINE_CAP,
        close_grace: float = DEFAULT_CLOSE_GRACE,
        prestart: int = DEFAULT_PRESTART,
        instances: int = 1,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec if isinstance(spec, TargetSpec) else parse_target(spec, allow_remote=allow_remote)
        self.timeout = timeout
        self.line_cap = line_cap
        self.close_grace = close_grace
        self.instances = instances
        self.ready_timeout = ready_timeout
        self.env = env
        self._stdio_pool: StdioPool | None = None
        self._spawn_pool: SpawnPool | None = None
        self._shared: StdioConnection | None = None
        self._lock = threading.Lock()
        self._prestart = prestart
        if self.spec.kind == "stdio":
            self._stdio_pool = StdioPool(
                self.spec, prestart, timeout=timeout, line_cap=line_cap, close_grace=close_grace, env=env
            )

    @property
    def transport(self) -> str:
        return self.spec.transport

    @property
    def pool(self) -> SpawnPool | StdioPool | None:
        return self._spawn_pool or self._stdio_pool

    def new_transcript(self) -> Transcript:
        return self.spec.new_transcript()

    def start(self) -> Target:
        """Bring the target up now (spawned HTTP instances, stdio spares); TargetError if it cannot."""
        if self.spec.kind == "http+spawn":
            with self._lock:
                if self._spawn_pool is None:
                    pool = SpawnPool(self.spec, self.instances, ready_timeout=self.ready_timeout, env=self.env)
                    pool.start()
                    self._spawn_pool = pool
        elif self._stdio_pool is not None:
            self._stdio_pool.fill()
        return self

    def connect(self, transcript: Transcript | None = None, *, fresh: bool = True) -> Connection:
        """A connection recording into `transcript` (a new one when None); TargetError if unusable."""
        transcript = transcript if transcript is not None else self.new_transcript()
        if self.spec.kind == "stdio":
            assert self._stdio_pool is not None
            try:
                if fresh:
                    return self._stdio_pool.take(transcript)
                return self._shared_connection(transcript)
            except SpawnError as exc:
                raise TargetError(f"cannot start {self.spec.text!r}: {exc}") from None
        if self.spec.kind == "http":
            return HttpConnection(transcript, [self.spec.url], timeout=self.timeout, body_cap=self.line_cap)
        self.start()
        assert self._spawn_pool is not None
        return HttpConnection(
            transcript, self._spawn_pool.urls, timeout=self.timeout, body_cap=self.line_cap,
            first_instance=self._spawn_pool.next_index(),
        )

    def _shared_connection(self, transcript: Transcript) -> Connection:
        with self._lock:
            if self._shared is None or not self._shared.alive():
                if self._shared is not None:
                    self._shared.terminate()
                assert self._stdio_pool is not None
                self._shared = self._stdio_pool.take(transcript)
                self._shared.shared = True
            else:
                self._shared.rebind(transcript)
            return self._shared

    def close(self) -> None:
        with self._lock:
            if self._shared is not None:
                self._shared.terminate()
                self._shared = None
            if self._stdio_pool is not None:
                self._stdio_pool.close()
            if self._spawn_pool is not None:
                self._spawn_pool.stop()
                self._spawn_pool = None

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_TARGETS: dict[tuple[str, bool], Target] = {}
_TARGETS_LOCK = threading.Lock()


def open_target(
    spec: TargetSpec | str | None,
    transcript: Transcript | None = None,
    *,
    fresh: bool = True,
    allow_remote: bool = False,
) -> Connection:
    """A connection to `spec` recording into `transcript`, through a module-wide Target per spec
    (created on first use with default options, closed at exit or by `close_targets()`)."""
    parsed = spec if isinstance(spec, TargetSpec) else parse_target(spec, allow_remote=allow_remote)
    key = (parsed.text, allow_remote)
    with _TARGETS_LOCK:
        target = _TARGETS.get(key)
        if target is None:
            target = _TARGETS[key] = Target(parsed, allow_remote=allow_remote)
    return target.connect(transcript, fresh=fresh)


def close_targets() -> None:
    with _TARGETS_LOCK:
        targets = list(_TARGETS.values())
        _TARGETS.clear()
    for target in targets:
        with contextlib.suppress(Exception):
            target.close()


atexit.register(close_targets)
