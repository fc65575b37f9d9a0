"""The interface every owner of a target's server processes offers: fresh and warm connections.

It lives in `targets/` because owning processes is the drivers' business: the probe, every fuzz
endpoint, replay and load ask an `Endpoint` (or `targets.connect.Target`) for connections and
never start or reap a server themselves. `fuzz/` re-exports these names for older imports.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from mcp_tempest.targets.connection import Connection
from mcp_tempest.targets.target_spec import TargetSpec
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets.transports import Transport


class HarnessError(RuntimeError):
    """Our side failed (the target cannot be started at all): a usage problem, never a finding."""


class Endpoint(ABC):
    """Connections to one target over one transport; owns the processes it starts."""

    transport: Transport
    spec: TargetSpec
    #: Whether `fresh` really gives a process nobody talked to (False for a running http:// URL).
    fresh_processes: bool = True

    def new_transcript(self) -> Transcript:
        return Transcript(target=self.spec.text, transport=self.transport)

    @abstractmethod
    def fresh(self, transcript: Transcript) -> Connection:
        """A connection to a process that has served nothing yet."""

    def warm(self, transcript: Transcript) -> Connection:
        """A connection that may have served earlier examples (default: a fresh one)."""
        return self.fresh(transcript)

    def retire(self, conn: Connection, *, reusable: bool) -> None:
        """Done with `conn` for this example; keep it warm if allowed and alive, else end it."""
        conn.close()

    def discard_warm(self) -> None:  # noqa: B027 - optional hook
        """Forget the warm process (it just took part in a failure; its state is suspect)."""

    def is_alive(self, conn: Connection) -> bool:
        """Whether the process behind `conn` can still answer (cheap: no request is sent)."""
        return conn.alive()

    def prepare(self, fresh_per_example: int) -> None:  # noqa: B027 - optional hook
        """Tell the pool how many fresh processes one example uses, so it keeps that many ready."""

    @abstractmethod
    def close(self) -> None:
        """End every process this endpoint started; idempotent."""
