"""The recorded exchange: one structure for everything that crossed the wire during a case.

Drivers append to it, the oracle judges it, and it becomes the replay file unchanged, so a
finding on disk is exactly what the server saw and said. Raw bytes are kept next to parsed
messages because byte-level mutations (a raw newline, invalid UTF-8) have no JSON form.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson

from mcp_tempest.targets import frame_recipe, wire
from mcp_tempest.targets.transports import Transport, transport_named

# Drivers record from several threads at once (concurrent HTTP POSTs, open SSE streams); one
# module-wide lock keeps each event's index, which `ref` points at, exact, and leaves the
# dataclass itself copyable and picklable.
_ADD_LOCK = threading.Lock()

# A server may write notifications without end (an SSE stream of log messages, a stdout flood of
# valid frames); every kept event costs memory, so past this many in one case the rest are counted
# in `Transcript.dropped`, not kept. Responses and requests are always kept: the oracle pairs them.
NOTIFICATION_KEEP: Final = 2048

# A message received in more bytes than this is stored (to_json) as its bytes alone: its parsed
# form is made again from them on load. A list page of 150,000 tiny tools is 12.8 MB as bytes and
# about 100 MB parsed; written both ways, every repro and the memory that writes it held it twice.
RAW_ONLY_BYTES: Final = 1024 * 1024

# The lists a result may carry (tools/list, prompts/list, resources/list, resources/templates/list).
LIST_KEYS: Final = ("tools", "prompts", "resources", "resourceTemplates")
# A received list result at least this big on the wire is shared (`SharedItems.received`): a page of
# 100,000 tools is 9 MB as bytes and about 57 MB parsed, and one `lists` example receives it 3 to 5
# times. Smaller ones cost less than the digest that would tell them apart.
SHARE_BYTES: Final = 64 * 1024


class SharedItems:
    """Equal list items held once: the items of a list read again share the earlier read's objects.

    Why: a list is read again and again (the catalogue reads every list three times for drift; a
    `lists` example asks for the same list on three processes and its second page twice). A tiny
    tool grows about eightfold when parsed, so 150,000 of them in one 12.8 MB page held three times
    took the harness to 592 MB, and 100,000 tools received five times in one transcript to 629 MB.

    Two ways in, one representation:
    - `begin`/`share` (list_reader): a later read's item equal to the first read's item at the same
      place in its list is replaced, in the page itself, by the first read's object.
    - `received` (every transcript, for each big list result it records): a page whose items are the
      same JSON as a page received before becomes that page's list object itself, and its digest is
      known (`digest`), which is how the oracle computes a list's facts once per distinct content;
      a page that differs shares, item by item, what it has in common with the first page of its
      list (when their first items agree).
    A page is held parsed twice only while it is compared."""

    __slots__ = ("_by_id", "_pages", "first")

    def __init__(self) -> None:
        self.first: dict[str, list[Any]] = {}
        self._pages: dict[bytes, list[Any]] = {}  # content digest -> the first page with that content
        # id of each page shared here -> (the page, held so the id stays its own, its digest)
        self._by_id: dict[int, tuple[list[Any], bytes]] = {}

    def begin(self, name: str, items: list[Any]) -> list[Any] | None:
        """The first read's items to share with (None: this read of `name` is the first: `items`,
        filled as it goes, is what later reads share)."""
        earlier = self.first.get(name)
        if earlier is None:
            self.first[name] = items
        return earlier

    @staticmethod
    def share(page: list[Any], earlier: list[Any], offset: int) -> None:
        """Replace each item of `page` (at `offset` in its list) equal to the earlier read's item
        at the same place by that item; in place, so the transcript's copy of the page shares it too."""
        for i in range(min(len(page), max(len(earlier) - offset, 0))):
            old = earlier[offset + i]
            if page[i] is not old and same_item(page[i], old):
                page[i] = old

    def received(self, message: Any) -> list[tuple[str, bytes]]:
        """Share the list in a received result (`message`, a JSON-RPC response) with the pages
        received before, here or in another live transcript (`_RECENT_PAGES`: a case confirmed
        on fresh processes is a second transcript of the same list); in place. The (key, digest)
        of each page, for `remember_pages` once the message is recorded."""
        result = message.get("result") if isinstance(message, dict) else None
        if not isinstance(result, dict):
            return []
        out: list[tuple[str, bytes]] = []
        for key in LIST_KEYS:
            items = result.get(key)
            if isinstance(items, list) and items:
                # a page `parse_received` took from one held: its digest is known, not made again
                digest = self.digest(items) or _recent_digest(key, items) or content_digest(items)
                if digest is not None:  # None: not writable as JSON (a lone surrogate): left as it is
                    result[key] = self._page(key, items, digest)
                    out.append((key, digest))
        return out

    def _page(self, key: str, items: list[Any], digest: bytes) -> list[Any]:
        earlier = self._pages.get(digest)
        if earlier is None:
            earlier = _recent_page(key, digest)
        if earlier is not None:
            items = earlier
        else:
            first = self.first.get(key)
            if first is None:
                self.first[key] = items
            elif same_item(items[0], first[0]):
                self.share(items, first, 0)
        self._pages.setdefault(digest, items)
        self._by_id[id(items)] = (items, digest)
        return items

    def digest(self, items: list[Any]) -> bytes | None:
        """The content digest of a page `received` shared (None for any other list)."""
        held = self._by_id.get(id(items))
        return held[1] if held is not None and held[0] is items else None

    def forget(self, message: Any) -> None:
        """Hold nothing more of the lists in `message` (see `Transcript.let_go`)."""
        result = message.get("result") if isinstance(message, dict) else None
        for items in (result.get(key) for key in LIST_KEYS) if isinstance(result, dict) else ():
            if not isinstance(items, list):
                continue
            held = self._by_id.pop(id(items), None)
            if held is not None and held[0] is items and self._pages.get(held[1]) is items:
                del self._pages[held[1]]
            for key in [k for k, first in self.first.items() if first is items]:
                del self.first[key]


# The big list pages of every live transcript, by (list key, digest): a weak reference to the event
# that holds each, so a page outlives no transcript. At most this many are remembered.
RECENT_PAGES: Final = 16
_RECENT_PAGES: dict[tuple[str, bytes], weakref.ref[Event]] = {}


def _recent_page(key: str, digest: bytes) -> list[Any] | None:
    ref = _RECENT_PAGES.get((key, digest))
    event = ref() if ref is not None else None
    message = event.message if event is not None else None
    result = message.get("result") if isinstance(message, dict) else None
    page = result.get(key) if isinstance(result, dict) else None
    return page if isinstance(page, list) else None


def _recent_digest(key: str, items: list[Any]) -> bytes | None:
    """The digest of `items` when it is a page a live transcript shares (None otherwise)."""
    for page_key, digest in list(_RECENT_PAGES):
        if page_key == key and _recent_page(key, digest) is items:
            return digest
    return None


def remember_pages(event: Event, pages: list[tuple[str, bytes]]) -> None:
    """Offer `event`'s shared pages to the transcripts that receive the same lists later, and its
    bytes to `parse_received`."""
    for page in pages:
        _RECENT_PAGES.pop(page, None)
        _RECENT_PAGES[page] = weakref.ref(event)
    while len(_RECENT_PAGES) > RECENT_PAGES:
        del _RECENT_PAGES[next(iter(_RECENT_PAGES))]
    held = event.held
    if not pages or held is None:
        return
    if isinstance(held, Spliced):  # its result's text is the shared part, as parse_received made it
        text: tuple[int, int] | None = (held.start, held.length)
    else:
        span = _result_span(held, event.message)
        text = (span[0], span[1] + 1 - span[0]) if span is not None else None
    if text is not None:
        _RECENT_LINES.append((weakref.ref(event), *text))
        del _RECENT_LINES[:-RECENT_PAGES]


# --- a page received again is not parsed again ---

# The big results of live transcripts, by their bytes: (event, where its result's text starts in
# the bytes it holds (`_base`), how long it is), the newest last; at most RECENT_PAGES.
_RECENT_LINES: list[tuple[weakref.ref[Event], int, int]] = []
# The message `parse_received` last took from a held one in this thread, with its bytes as shared,
# for `Transcript.add` to hold them so (the driver records the message at once, in this thread).
_TAKEN = threading.local()
_RESULT_KEY: Final = re.compile(rb'"result"[ \t\n\r]*:[ \t\n\r]*')
# Where the result's text stood, in the small document parsed in its place.
_HOLE: Final = b'"\\u0000mcp-tempest: the result\\u0000"'
_HOLE_VALUE: Final = "\u0000mcp-tempest: the result\u0000"
# How far from the end of a message its result's text may end (the members written after it).
_TAIL: Final = 4096


def _envelope(raw: bytes, start: int, end: int) -> Any:
    """`raw` parsed with its bytes start..end (a result's text) replaced by _HOLE: the message
    around a result, a few bytes however big the result (None when that is not a message whose
    "result" is exactly those bytes)."""
    try:
        value = wire.loads(raw[:start] + _HOLE + raw[end + 1:])
    except wire.DecodeError:
        return None
    if not isinstance(value, dict) or value.get("result") != _HOLE_VALUE or orjson.dumps(value).count(_HOLE) != 1:
        return None
    return value


def _result_span(raw: bytes, message: Any) -> tuple[int, int] | None:
    """Where the text of `message`'s result (an object) starts and ends in `raw`, the bytes it
    was parsed from: found by parsing the message around it (`_envelope`), never by walking it."""
    found = _RESULT_KEY.search(raw)
    if found is None or raw[found.end():found.end() + 1] != b"{" or not isinstance(message, dict):
        return None
    start = found.end()
    end = len(raw)
    for _ in range(8):  # the last few closing braces: the result's is one of them
        end = raw.rfind(b"}", max(start, len(raw) - _TAIL), end)
        if end < 0:
            return None
        envelope = _envelope(raw, start, end)
        if envelope is not None and envelope == {**message, "result": _HOLE_VALUE}:
            return start, end
    return None


def parse_received(raw: bytes, *, line: bool = False) -> Any:
    """What a driver received, parsed: `wire.parse_line(raw)` (`line`) or `wire.loads(raw)`.

    Why not just that: a `lists` example asks for the same list three to five times, and each
    answer was parsed whole (100,000 tools: 9 MB of bytes, about 60 MB parsed) while the earlier
    one was held, to be shared item by item only then (SharedItems). Here a big message whose
    result is, byte for byte, the result of one a live transcript holds is parsed around its
    result only (`_envelope`, a few bytes) and takes that result's values: the message is what
    parsing it whole makes, and the list is parsed once."""
    _TAKEN.message = None
    found = _RESULT_KEY.search(raw) if len(raw) >= SHARE_BYTES and _RECENT_LINES else None
    if found is not None:
        at = found.end()
        for ref, start, length in list(_RECENT_LINES):
            held = ref()
            message = held.message if held is not None else None
            base = _base(held) if held is not None else None
            if base is None or not isinstance(message, dict) or not isinstance(message.get("result"), dict) \
                    or abs(len(raw) - held.raw_size()) > _TAIL or not raw.startswith(memoryview(base)[start:start + length], at):
                continue
            envelope = _envelope(raw, at, at + length - 1)
            if envelope is not None:
                envelope["result"] = dict(message["result"])
                _TAKEN.message, _TAKEN.raw = envelope, Spliced(raw[:at], base, start, length, raw[at + length:])
                return envelope
    return wire.parse_line(raw) if line else wire.loads(raw)


def _base(event: Event) -> bytes | None:
    """The bytes an event's raw is held in: its own, or those it shares."""
    held = event.held
    return held.base if isinstance(held, Spliced) else held


def _taken(message: Any, raw: Any) -> Any:
    """`raw` as `Transcript.add` holds it: shared (Spliced) when parse_received took `message`."""
    if getattr(_TAKEN, "message", None) is message and len(_TAKEN.raw) == len(raw):
        raw = _TAKEN.raw
    _TAKEN.message = None
    _TAKEN.raw = None
    return raw


#: Items of a list written at a time for its digest: the list is never written whole (a page of
#: 100,000 tools is 9 MB of JSON, and orjson reserves far more than that while it writes).
DIGEST_ITEMS: Final = 1024


def content_digest(value: Any) -> bytes | None:
    """A digest of `value` written as JSON in its own key order (None when orjson cannot write it):
    equal digests, equal JSON. A list is written DIGEST_ITEMS items at a time, the same bytes."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        if not isinstance(value, list) or len(value) <= DIGEST_ITEMS:
            digest.update(orjson.dumps(value))
            return digest.digest()
        digest.update(b"[")
        for at in range(0, len(value), DIGEST_ITEMS):
            part = orjson.dumps(value[at:at + DIGEST_ITEMS])
            digest.update(b"," if at else b"")
            digest.update(memoryview(part)[1:-1])
        digest.update(b"]")
        return digest.digest()
    except orjson.JSONEncodeError:
        return None


def same_item(a: Any, b: Any) -> bool:
    """Whether two items are the same JSON, at C speed: equal bytes when written in their own key
    order (an item equal but written in another order is just not shared; drift compares values)."""
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except orjson.JSONEncodeError:  # nested past orjson's 254 levels: compared without recursion
        from mcp_tempest.targets.json_depth import same_json

        return same_json(a, b)


# In a spawn event's note: the process is a warm one that served earlier cases (the stdio pool's
# rebind), so what it says first may still belong to one of them.
REUSED_NOTE: Final = "(reused)"
# After REUSED_NOTE: an earlier case sent this process a frame that claimed no 2026-07-28 era (an
# initialize, a claim-less request): a dual-era server may have opened the process in the 2025 era.
ERA_OPEN_NOTE: Final = "era-open"

EventKind = Literal[
    "spawn",  # a process or HTTP instance came up; note = command line or URL
    "send",  # a frame the harness wrote; raw = exact bytes; headers = HTTP request headers
    "recv",  # a JSON value the server wrote; raw = its line or SSE data; HTTP: status + headers
    "http",  # an HTTP response that carried no JSON-RPC message (202, 405, empty 4xx ...)
    "noise",  # a stdout line that is not JSON (raw holds at most its first bytes)
    "oversize",  # a stdout line longer than the cap; note = its length so far
    "timeout",  # nothing arrived before a deadline; ref = the send it waited for; note = what was awaited
    "closed",  # the server closed stdout or the connection
    "exit",  # the process ended; status = exit status (negative: signal)
    "stderr",  # what the process wrote to stderr (tail), attached when it is reaped
    "error",  # a transport failure on our side (connection refused, broken pipe); note says which
    "reading",  # client mode: a line the client under test printed about what it understood
]


class Spliced:
    """The bytes of a received message that repeat an earlier message's but for its envelope (the
    same list page answered again, under another id): the earlier bytes are shared, only the
    envelope around them is held (`parse_received`). A `lists` example receives one page three to
    five times; 9 to 15 MB each, held whole, they were most of what the example held."""

    __slots__ = ("base", "length", "prefix", "start", "suffix")

    def __init__(self, prefix: bytes, base: bytes, start: int, length: int, suffix: bytes) -> None:
        self.prefix, self.base, self.start, self.length, self.suffix = prefix, base, start, length, suffix

    def __bytes__(self) -> bytes:
        return b"".join((self.prefix, memoryview(self.base)[self.start:self.start + self.length], self.suffix))

    def __len__(self) -> int:
        return len(self.prefix) + self.length + len(self.suffix)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Spliced | bytes):
            return bytes(self) == bytes(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as the bytes it stands for
        return (bytes, (bytes(self),))


@dataclass(slots=True, weakref_slot=True, init=False)
class Event:
    kind: EventKind
    t: float
    proc: int = 0
    message: Any = None
    held: bytes | Spliced | None = field(default=None, repr=False)  # `raw` as held (see Spliced)
    status: int | None = None
    headers: dict[str, str] | None = None
    note: str = ""
    ref: int | None = None  # HTTP: the `send` this response answers; `timeout` (both): the send awaited

    def __init__(self, kind: EventKind, t: float, proc: int = 0, message: Any = None,
                 raw: bytes | Spliced | None = None, status: int | None = None,
                 headers: dict[str, str] | None = None, note: str = "", ref: int | None = None) -> None:
        self.kind, self.t, self.proc, self.message, self.held = kind, t, proc, message, raw
        self.status, self.headers, self.note, self.ref = status, headers, note, ref

    @property
    def raw(self) -> bytes | None:
        """The exact bytes of the frame (a received one shared with an earlier one: made again)."""
        held = self.held
        return bytes(held) if isinstance(held, Spliced) else held

    @raw.setter
    def raw(self, value: bytes | Spliced | None) -> None:
        self.held = value

    def raw_size(self) -> int:
        """len(raw), without making a shared one again."""
        return len(self.held) if self.held is not None else 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "t": round(self.t, 6), "proc": self.proc}
        raw = self.raw
        made = frame_recipe.dump_bytes(raw, self.message, "message") if self.kind == "send" else None
        if made is not None:  # a generated huge frame: how to make it, not its 11 MiB twice
            out.update(made)
        elif self.message is not None and not self.raw_only():
            out["message"] = self.message
        if raw is not None and made is None:
            try:
                out["raw"] = raw.decode("utf-8")
            except UnicodeDecodeError:
                out["raw_b64"] = base64.b64encode(raw).decode("ascii")
        for name in ("status", "headers", "ref"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.note:
            out["note"] = self.note
        return out

    def raw_only(self) -> bool:
        """Whether `to_json` stores this event's message as its bytes alone (see RAW_ONLY_BYTES)."""
        return self.kind == "recv" and self.raw_size() > RAW_ONLY_BYTES

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        raw: bytes | None = None
        message = data.get("message")
        made = frame_recipe.load_bytes(data, "message")
        if made is not None:
            raw, message = made
        elif "raw" in data:
            raw = data["raw"].encode("utf-8")
        elif "raw_b64" in data:
            raw = base64.b64decode(data["raw_b64"])
        if message is None and "message" not in data and data.get("kind") == "recv" and raw is not None:
            try:  # a big message stored as its bytes alone (RAW_ONLY_BYTES)
                message = wire.parse_line(raw)
            except wire.DecodeError:
                message = None
        return cls(
            kind=data["kind"],
            t=float(data.get("t", 0.0)),
            proc=int(data.get("proc", 0)),
            message=message,
            raw=raw,
            status=data.get("status"),
            headers=data.get("headers"),
            note=data.get("note", ""),
            ref=data.get("ref"),
        )


@dataclass(slots=True)
class Transcript:
    target: str
    transport: Transport  # a name ("stdio", "http") given here becomes its Transport
    events: list[Event] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    notifications: int = 0
    dropped: int = 0
    # The big list results received, shared by content (see SharedItems.received).
    shared: SharedItems = field(default_factory=SharedItems, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.transport = transport_named(self.transport)

    def add(self, kind: EventKind, **fields: Any) -> int:
        """Append an event stamped now; returns its index so HTTP responses can `ref` their request.

        A notification past NOTIFICATION_KEEP is counted, not kept; the first one dropped leaves an
        `oversize` event in its place so the transcript says what is missing (index -1 for the rest).
        """
        message = fields.get("message")
        raw = fields.get("raw")
        if kind == "recv" and raw is not None and len(raw) >= SHARE_BYTES and isinstance(message, dict) \
                and "result" in message:
            fields["raw"] = _taken(message, raw)
            with _ADD_LOCK:  # the registries are shared, and drivers record from several threads
                pages = self.shared.received(message)
                self.events.append(Event(kind, time.monotonic() - self.started, **fields))
                remember_pages(self.events[-1], pages)
                return len(self.events) - 1
        with _ADD_LOCK:
            if kind == "recv" and isinstance(message, dict) and "method" in message and "id" not in message:
                self.notifications += 1
                if self.notifications > NOTIFICATION_KEEP:
                    self.dropped += 1
                    if self.dropped > 1:
                        return -1
                    kind, fields = "oversize", {
                        "proc": fields.get("proc", 0),
                        "ref": fields.get("ref"),
                        "note": f"more than {NOTIFICATION_KEEP} notifications in one case: the rest are counted, not kept",
                    }
            self.events.append(Event(kind, time.monotonic() - self.started, **fields))
            return len(self.events) - 1

    def let_go(self, event: Event) -> None:
        """Keep only the bytes of a received message, its parsed form let go: `to_json` writes it as
        its bytes and `from_json` parses them again, so the file is the same; in memory the event
        has no message. For a transcript that is written but not judged: the campaign's era probe,
        whose list pages are measured as they arrive (targets/list_reader.py `take`), so that it
        holds one parsed page at a time, not the whole list."""
        if event.kind != "recv" or event.held is None or event.message is None:
            return
        with _ADD_LOCK:
            self.shared.forget(event.message)
            event.message = None

    def of_kind(self, *kinds: EventKind) -> Iterator[Event]:
        return (e for e in self.events if e.kind in kinds)

    def sent(self) -> list[Event]:
        return [e for e in self.events if e.kind == "send"]

    def received(self) -> list[Event]:
        return [e for e in self.events if e.kind == "recv"]

    def processes(self) -> list[int]:
        return sorted({e.proc for e in self.events})

    def responses_to(self, send_index: int) -> list[Event]:
        """Responses that answer the frame at `send_index`.

        Over HTTP the pairing is exact (`ref`). Over stdio it is by id on the same process, among
        messages that arrived after the frame was written, which is all a client can know.
        """
        sent = self.events[send_index]
        if self.transport.pairs_by_request:
            return [e for e in self.events if e.kind == "recv" and e.ref == send_index]
        msg = sent.message
        if not isinstance(msg, dict) or "id" not in msg:
            return []
        want = msg["id"]
        return [
            e
            for e in self.events[send_index + 1 :]
            if e.kind == "recv"
            and e.proc == sent.proc
            and isinstance(e.message, dict)
            and "method" not in e.message
            and "id" in e.message
            and _same_id(e.message["id"], want)
        ]

    def to_json(self, *, events: bool = True) -> dict[str, Any]:
        """The transcript as JSON; without `events`, the rest of it (its events sized one at a time)."""
        return {
            "target": self.target,
            "transport": self.transport,
            **({"events": [e.to_json() for e in self.events]} if events else {}),
            **({"notifications_dropped": self.dropped} if self.dropped else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Transcript:
        return cls(
            target=data["target"],
            transport=data["transport"],
            events=[Event.from_json(e) for e in data.get("events", [])],
            dropped=int(data.get("notifications_dropped", 0)),
        )


def _same_id(a: Any, b: Any) -> bool:
    """JSON-RPC ids match by value and type: 1 and "1" are different ids, and so are 1 and True."""
    return type(a) is type(b) and a == b
