"""Open `subscriptions/listen` streams of one process and what feeds them.

A listen stream belongs to its request, not to the connection (DIGEST SL-8): it is keyed by the
listen request's id and dies with it. Changes are found by polling the shared store for events
created since the last look, so an event created by ANOTHER process reaches this process's
listeners too (within one poll period), which a per-process callback could never do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from mcp_tempest.targets.reference.catalog import CALENDAR_URI_PREFIX, SERVER_INFO, WEEK_URI
from mcp_tempest.targets.reference.store import CHAPTER_CALENDAR_ID, Store
from mcp_tempest.targets.wire import META_SERVER_INFO, META_SUBSCRIPTION_ID

POLL_INTERVAL_S: Final = 0.2


def id_key(request_id: Any) -> tuple[type, Any]:
    """Ids match by type and value: 1 and "1" are different subscriptions (SUB-04)."""
    return (type(request_id), request_id)


@dataclass(slots=True, eq=False)
class Listen:
    """One accepted listen request; `send` is bound by the transport adapter."""

    request_id: Any
    uris: frozenset[str]
    send: Callable[[bytes], None] = field(default=lambda _b: None)
    end_id_as_text: bool = False  # the listen-end-id-as-string mutant: the closing result names 1 as "1"

    def updated(self, uri: str) -> bytes:
        return orjson.dumps({
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": uri, "_meta": {META_SUBSCRIPTION_ID: self.request_id}},
        })

    def closing_result(self) -> bytes:
        """The graceful end of the stream (SUB-08): a SubscriptionsListenResult."""
        sub_id = str(self.request_id) if self.end_id_as_text else self.request_id
        meta = {META_SUBSCRIPTION_ID: sub_id, META_SERVER_INFO: SERVER_INFO}
        return orjson.dumps({"jsonrpc": "2.0", "id": self.request_id, "result": {"resultType": "complete", "_meta": meta}})


def uris_for_calendar(calendar_id: str) -> tuple[str, ...]:
    uri = CALENDAR_URI_PREFIX + calendar_id
    return (uri, WEEK_URI) if calendar_id == CHAPTER_CALENDAR_ID else (uri,)


class Hub:
    """The listen streams of this process; `poll` pushes resource updates to the matching ones."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._subs: dict[Any, Listen] = {}
        self._seen = -1

    @property
    def active(self) -> bool:
        return bool(self._subs)

    def add(self, key: Any, listen: Listen) -> None:
        if not self._subs:
            self._seen = self._store.last_seq()
        self._subs[key] = listen

    def remove(self, key: Any) -> Listen | None:
        return self._subs.pop(key, None)

    def drain(self) -> list[Listen]:
        """Every open stream, removed: for shutdown, which closes each gracefully."""
        subs = list(self._subs.values())
        self._subs.clear()
        return subs

    def poll(self) -> None:
        if not self._subs:
            return
        changes = self._store.changes_after(self._seen)
        if not changes:
            return
        self._seen = changes[-1][0]
        touched: set[str] = set()
        for _, calendar_id in changes:
            touched.update(uris_for_calendar(calendar_id))
        for listen in list(self._subs.values()):
            for uri in sorted(touched & listen.uris):
                listen.send(listen.updated(uri))
