"""The reference server's explicit store: one SQLite file shared by every process that names it.

Why SQLite: the 2026-07-28 revision says a connection is not a session (DIGEST SL-5, SL-6), so
anything that outlives one request must be reachable from any process through an explicit handle
(a calendar id). A file in WAL mode with one connection per process gives exactly that without a
daemon. The file also holds the requestState HMAC key, so every process of one store can verify
state minted by another (MRTR-18), and the table of spent requestState nonces, so single use holds
across processes too.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

CHAPTER_CALENDAR_ID: Final = "cal_chapter"
CHAPTER_CALENDAR_NAME: Final = "chapter"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS calendars(
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, calendar_id TEXT NOT NULL,
    title TEXT NOT NULL, starts_at TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_calendar ON events(calendar_id, starts_at, seq);
CREATE TABLE IF NOT EXISTS spent_states(nonce TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL);
"""


class ReplayError(Exception):
    """The requestState nonce was already spent by an earlier completion."""


def default_db_path() -> Path:
    """The per-user store every process started without --db shares (COMMON conventions)."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"mcp-tempest-{uid}" / "reference.sqlite3"


def now_ms() -> int:
    return int(time.time() * 1000)


def _retry_while_locked(step: Callable[[], None], *, budget_s: float = 10.0) -> None:
    """Run `step`, retrying for a bounded time while another process holds the store's lock."""
    deadline = time.monotonic() + budget_s
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Store:
    """Calendars, events, the shared HMAC key and spent nonces, on one SQLite connection."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(str(path), timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout=10000")
        _retry_while_locked(self._open_schema)
        self._spends = 0

    def _open_schema(self) -> None:
        # Switching to WAL takes an exclusive lock that SQLite's busy handler does not always wait
        # for, so two processes opening a fresh store at once (a pool pre-starting the next one)
        # can see "database is locked": hence the retry around it. WAL persists in the file.
        if str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.execute(
            "INSERT OR IGNORE INTO calendars(id, name, created_ms) VALUES(?, ?, 0)",
            (CHAPTER_CALENDAR_ID, CHAPTER_CALENDAR_NAME),
        )

    def close(self) -> None:
        self._db.close()

    # --- the shared secret ---

    def state_key(self) -> bytes:
        """The HMAC key of this store, created by whichever process asks first."""
        self._db.execute(
            "INSERT OR IGNORE INTO settings(key, value) VALUES('state_key', ?)", (os.urandom(32),)
        )
        row = self._db.execute("SELECT value FROM settings WHERE key='state_key'").fetchone()
        return bytes(row[0])

    # --- calendars ---

    def open_calendar(self, name: str) -> str:
        """Get-or-create by name; the id is random on first creation and stable afterwards."""
        self._db.execute(
            "INSERT OR IGNORE INTO calendars(id, name, created_ms) VALUES(?, ?, ?)",
            ("cal_" + secrets.token_hex(8), name, now_ms()),
        )
        row = self._db.execute("SELECT id FROM calendars WHERE name=?", (name,)).fetchone()
        return str(row[0])

    def calendar_exists(self, calendar_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM calendars WHERE id=?", (calendar_id,)).fetchone() is not None

    def calendar_ids(self, prefix: str, limit: int) -> list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._db.execute(
            "SELECT id FROM calendars WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
            (escaped + "%", limit),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def spend_state(self, nonce: str, expires_ms: int) -> None:
        """Consume a requestState nonce on its own (an answer that creates nothing: decline,
        cancel); ReplayError when it was already spent. Shared by every process of the store."""
        try:
            self._db.execute("INSERT INTO spent_states(nonce, expires_ms) VALUES(?, ?)", (nonce, expires_ms))
        except sqlite3.IntegrityError:
            raise ReplayError("requestState already used") from None

    # --- events ---

    def create_event(
        self, calendar_id: str, title: str, starts_at: str, *, spend: tuple[str, int] | None = None
    ) -> dict[str, Any]:
        """Insert an event; with `spend` (nonce, expiry ms) the nonce is consumed atomically.

        One transaction for both, so a replayed requestState can never create a second event.
        """
        event = {"eventId": "evt_" + secrets.token_hex(8), "calendarId": calendar_id,
                 "title": title, "startsAt": starts_at}
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            if spend is not None:
                try:
                    db.execute("INSERT INTO spent_states(nonce, expires_ms) VALUES(?, ?)", spend)
                except sqlite3.IntegrityError:
                    raise ReplayError("requestState already used") from None
            db.execute(
                "INSERT INTO events(id, calendar_id, title, starts_at, created_ms) VALUES(?, ?, ?, ?, ?)",
                (event["eventId"], calendar_id, title, starts_at, now_ms()),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if spend is not None:
            self._spends += 1
            if self._spends % 256 == 0:
                db.execute("DELETE FROM spent_states WHERE expires_ms < ?", (now_ms(),))
        return event

    def list_events(self, calendar_id: str, limit: int) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT id, title, starts_at FROM events WHERE calendar_id=? ORDER BY starts_at, seq LIMIT ?",
            (calendar_id, limit),
        ).fetchall()
        return [{"eventId": r[0], "title": r[1], "startsAt": r[2]} for r in rows]

    def last_seq(self) -> int:
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
        return int(row[0])

    def changes_after(self, seq: int) -> list[tuple[int, str]]:
        """(seq, calendar id) of events created after `seq`: what listen streams are told about."""
        rows = self._db.execute(
            "SELECT seq, calendar_id FROM events WHERE seq > ? ORDER BY seq LIMIT 1000", (seq,)
        ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]


class MemoryStore(Store):
    """Mutant `memory-store` (SL-5): calendars and events kept in this process only.

    The key and spent nonces stay in SQLite, so the only deviation is the one the mutant names.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._calendars: dict[str, str] = {CHAPTER_CALENDAR_NAME: CHAPTER_CALENDAR_ID}
        self._events: list[tuple[int, dict[str, Any]]] = []

    def open_calendar(self, name: str) -> str:
        return self._calendars.setdefault(name, "cal_" + secrets.token_hex(8))

    def calendar_exists(self, calendar_id: str) -> bool:
        return calendar_id in self._calendars.values()

    def calendar_ids(self, prefix: str, limit: int) -> list[str]:
        return sorted(c for c in self._calendars.values() if c.startswith(prefix))[:limit]

    def create_event(
        self, calendar_id: str, title: str, starts_at: str, *, spend: tuple[str, int] | None = None
    ) -> dict[str, Any]:
        if spend is not None:
            try:
                self._db.execute("INSERT INTO spent_states(nonce, expires_ms) VALUES(?, ?)", spend)
            except sqlite3.IntegrityError:
                raise ReplayError("requestState already used") from None
        event = {"eventId": "evt_" + secrets.token_hex(8), "calendarId": calendar_id,
                 "title": title, "startsAt": starts_at}
        self._events.append((len(self._events) + 1, event))
        return event

    def list_events(self, calendar_id: str, limit: int) -> list[dict[str, Any]]:
        found = [e for _, e in self._events if e["calendarId"] == calendar_id]
        found.sort(key=lambda e: e["startsAt"])
        return [{k: e[k] for k in ("eventId", "title", "startsAt")} for e in found[:limit]]

    def last_seq(self) -> int:
        return len(self._events)

    def changes_after(self, seq: int) -> list[tuple[int, str]]:
        return [(s, e["calendarId"]) for s, e in self._events[seq:]]
