"""Reading a paginated list (`tools/list`, `resources/list`, ...) within a budget of pages,
bytes and time, and saying honestly how far the read got.

Why: `nextCursor` is the server's to give. A server whose cursor never ends, with 12,000 tools
of 1 KB a page, took the catalogue to 2.7 GB before it was killed; one whose cursor repeats was
counted as if the list went on; a page over the frame cap showed as "0 tools" (issue 30). Every
list the harness reads (the era probe, `catalogue`, the campaign's surface, load discovery) goes
through `read_list`, so each stops within the same budget, and each result says whether it is
complete and, when not, why and how far it got: a count from a cut list is a lower bound and is
labelled so, an unreadable list is not "0".

The byte budget is enforced before a page is held, not after: while a page is awaited the
connection's frame cap is lowered to what is left of the budget (`fetch_page`), so a page that
would pass the budget is discarded by the driver as it streams in, never parsed or kept.

A reader that needs only what it measures of each page (`take`: the campaign's era probe, whose
catalogue is counted as it arrives) holds one parsed page at a time, whatever the list's length:
each page is handed over, then let go, the transcript's parsed copy included (`Page.release`),
before the next one is asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from mcp_tempest.targets import validate
from mcp_tempest.targets.connection import DEFAULT_LINE_CAP, Connection, is_response_to
from mcp_tempest.targets.transcript import Event, SharedItems

MIB: Final = 1024 * 1024
# Defaults: one pass over a server's lists (all of them) may follow 1,000 pages per list, hold
# 16 MiB of list pages (the frame cap: any page a driver accepts fits) and take 30 s. The catalogue
# makes three passes (drift), so at most 48 MiB of pages are held, whatever the server lists.
DEFAULT_MAX_PAGES: Final = 1000
DEFAULT_LIST_MIB: Final = DEFAULT_LINE_CAP // MIB
DEFAULT_LIST_SECONDS: Final = 30.0
# The options that raise them stop here: past these a read is not a measurement but a hazard
# (10,000 pages of events alone are tens of MB; 256 MiB of pages is about 0.7 GB held per pass).
MAX_PAGES_CEILING: Final = 10_000
LIST_MIB_CEILING: Final = 256
LIST_SECONDS_CEILING: Final = 3600.0


@dataclass(frozen=True, slots=True)
class ListBudget:
    """What one pass over a server's lists may spend: `pages` per list, `bytes` and `seconds`
    over all the lists of the pass. `shared`: the passes of one reading share their equal items
    (`SharedItems`), so what they hold parsed is one copy of the lists, not one per pass."""

    pages: int = DEFAULT_MAX_PAGES
    bytes: int = DEFAULT_LIST_MIB * MIB
    seconds: float = DEFAULT_LIST_SECONDS
    shared: SharedItems | None = field(default=None, compare=False)
    # whether the command reading the lists offers the options that raise this budget (catalogue,
    # probe): a note names an option only where the user can pass it
    options: bool = True

    def raises(self, option: str, before: str = "") -> str:
        """The parenthesis a cut's reason ends with: what was spent, and the option that raises it."""
        said = [part for part in (before, f"{option} raises it" if self.options else "") if part]
        return f" ({'; '.join(said)})" if said else ""

    def spend(self) -> Spend:
        return Spend(self)


@dataclass(slots=True)
class Spend:
    """One pass's running total against its budget (shared by the lists of the pass)."""

    budget: ListBudget
    bytes: int = 0
    started: float = field(default_factory=time.monotonic)

    def seconds_left(self) -> float:
        return self.budget.seconds - (time.monotonic() - self.started)

    def bytes_left(self) -> int:
        return self.budget.bytes - self.bytes


@dataclass(slots=True)
class Page:
    """One page as the transport delivered it: the result (None when there is none), its size on
    the wire, and when there is no result, why (`over_cap`: the page was too big to hold).
    `release`: lets go of the parsed copy the transcript holds (only its bytes stay), for a reader
    that keeps nothing of the page (`take`)."""

    result: dict[str, Any] | None
    size: int = 0
    failure: str = ""
    over_cap: int | None = None  # the cap the page passed (bytes), when it did
    release: Callable[[], None] | None = None


@dataclass(slots=True)
class ListRead:
    """One read of one list: the items, how far it got, and whether it is the whole list.

    `failed`: the first page could not be read, so nothing is known (not "0 items").
    `cut`: the read stopped before the last page; `items` is a prefix and its count a lower bound.
    `loop`: the page on which `nextCursor` repeated a cursor already followed (the server's
    pagination loops; the read stopped there at once), else None."""

    name: str
    method: str
    items: list[Any] = field(default_factory=list)
    pages: int = 0
    bytes: int = 0
    cut: str = ""
    failed: str = ""
    loop: int | None = None
    loop_cursor: str | None = None
    dropped: int = 0  # items let go once measured (`drop_items`): still counted, no longer held

    @property
    def complete(self) -> bool:
        return not self.cut and not self.failed

    @property
    def count(self) -> int | None:
        return None if self.failed else len(self.items) + self.dropped

    def drop_items(self) -> None:
        """Let the items go once what is needed of them is measured (the catalogue's costs and
        findings): 150,000 parsed tools are about 80 MB the reports never read again."""
        self.dropped += len(self.items)
        self.items = []

    def describe(self) -> str:
        """One line on how the read ended: what a user reading a count must know about it."""
        if self.failed:
            return f"{self.name}: could not be read: {self.failed}"
        got = f"{self.count} read in {self.pages} page{'s' if self.pages != 1 else ''} ({_size(self.bytes)})"
        if not self.cut:
            return f"{self.name}: {got}, complete"
        return f"{self.name}: cut short: {self.cut}; {got}, so the count is a lower bound"

    def to_json(self) -> dict[str, Any]:
        return {"complete": self.complete, "count": self.count, "pages": self.pages, "bytes": self.bytes,
                "cut": self.cut or None, "failed": self.failed or None, "loop_page": self.loop}


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n} bytes"


Fetch = Callable[[str | None, float, int], Page]
# What a reader that keeps no items does with each page's items, as they arrive (see `read_list`).
Take = Callable[[list[Any]], None]


def read_list(fetch: Fetch, name: str, method: str, key: str, budget: ListBudget,
              spend: Spend | None = None, take: Take | None = None) -> ListRead:
    """Follow `nextCursor` from the first page while the budget lasts.

    `fetch(cursor, seconds_left, bytes_left)` asks for one page and must not hold one bigger
    than `bytes_left`. `spend` is the pass's running total (a fresh one per call by default).
    With `take`, each page's items go to it and are not kept (the read counts them, `dropped`):
    the page, the transcript's copy included, is let go before the next one is asked for."""
    spend = spend if spend is not None else budget.spend()
    read = ListRead(name, method)
    shared = budget.shared if take is None else None
    earlier = shared.begin(name, read.items) if shared is not None else None
    followed: set[str] = set()
    cursor: str | None = None
    while True:
        stop = _exhausted(read, budget, spend)
        if stop:
            read.cut = stop
            break
        page = fetch(cursor, spend.seconds_left(), spend.bytes_left())
        result = page.result
        if not isinstance(result, dict) or not isinstance(result.get(key), list):
            why = _why_not(page, result, budget, spend)
            over_budget = why.startswith("would pass")
            if read.pages == 0 and not (over_budget and spend.bytes > 0):
                read.failed = why.removeprefix("failed: ") if why.startswith("failed: ") else f"page 1 {why}"
            else:
                read.cut = f"page {read.pages + 1} {why}"
            break
        read.pages += 1
        read.bytes += page.size
        spend.bytes += page.size
        nxt = result.get("nextCursor")
        if take is not None:
            take(result[key])
            read.dropped += len(result[key])
            if page.release is not None:
                page.release()
            del page, result  # not held while the next page is parsed
        else:
            if earlier is not None:
                SharedItems.share(result[key], earlier, len(read.items))
            read.items.extend(result[key])
        if not isinstance(nxt, str):  # an empty string is a valid cursor (DIGEST 9.5)
            break
        if nxt in followed:
            read.loop, read.loop_cursor = read.pages, nxt
            read.cut = (f"nextCursor on page {read.pages} repeats a cursor already followed: the server's "
                        "pagination loops, so the read stopped there")
            break
        followed.add(nxt)
        cursor = nxt
    return read


def _exhausted(read: ListRead, budget: ListBudget, spend: Spend) -> str:
    if read.pages >= budget.pages:
        return f"nextCursor never ended after {read.pages:,} pages{budget.raises('--max-pages', 'the limit')}"
    if spend.seconds_left() <= 0:
        return f"the {budget.seconds:g} s time budget for reading lists ran out{budget.raises('--list-seconds')}"
    if spend.bytes_left() <= 0:
        return f"the {_size(budget.bytes)} byte budget for list pages was spent{budget.raises('--max-list-mib')}"
    return ""


def _why_not(page: Page, result: Any, budget: ListBudget, spend: Spend) -> str:
    if page.over_cap is not None:
        if page.over_cap < DEFAULT_LINE_CAP:  # the cap was lowered to what was left of the budget
            return (f"would pass the {_size(budget.bytes)} byte budget for list pages"
                    f"{budget.raises('--max-list-mib', f'{_size(spend.bytes)} spent')}")
        return f"is over {_size(page.over_cap)}, the frame cap ({page.failure})"
    if page.failure:
        if spend.seconds_left() <= 0:
            return (f"got no answer before the {budget.seconds:g} s time budget for reading lists ran out"
                    f"{budget.raises('--list-seconds')}")
        return f"failed: {page.failure}"
    return "failed: malformed result" if result is not None else "failed: no result"


def describe_reply(reply: dict[str, Any] | None, timeout: float | None = None) -> str:
    """Why a reply is not a result, in a few words (the server's own message shortened)."""
    if reply is None:
        return f"no reply within {timeout:g} s" if timeout else "no reply"
    error = reply.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')} {str(error.get('message'))[:80]!r}"
    return "malformed result"


# --- one page over a harness connection (stdio or HTTP) ---


@contextlib.contextmanager
def _frame_cap(conn: Connection, cap: int) -> Iterator[int]:
    """Lower the connection's frame cap to `cap` while a page is awaited (never raise it)."""
    attr = "line_cap" if hasattr(conn, "line_cap") else "body_cap" if hasattr(conn, "body_cap") else ""
    before = getattr(conn, attr, DEFAULT_LINE_CAP) if attr else DEFAULT_LINE_CAP
    now = max(1, min(before, cap))
    if attr:
        setattr(conn, attr, now)
    try:
        yield now
    finally:
        if attr:
            setattr(conn, attr, before)


def _page_event(index: int, want: Any) -> Callable[[Event], bool]:
    """The answer to a page request, or what stands in for it: a line over the cap, or a line
    that opens like a JSON object and does not parse (nested too deep, cut off)."""

    def match(e: Event) -> bool:
        if is_response_to(e, want) or e.kind == "oversize":
            return True
        return e.kind == "noise" and (e.raw or b"").lstrip()[:1] == b"{"

    return match


def fetch_page(conn: Connection, msg: dict[str, Any], *, timeout: float, bytes_left: int,
               headers: dict[str, str] | None = None) -> tuple[Page, dict[str, Any] | None]:
    """Send one list request on `conn` and wait at most `timeout` for its page, which may not be
    bigger than `bytes_left` (the driver discards a bigger one as it arrives). The page and the
    reply it came in (None when there was none)."""
    from mcp_tempest.targets.http_driver import HttpConnection

    timeout = max(timeout, 0.001)
    want = msg.get("id")
    with _frame_cap(conn, bytes_left) as cap:
        if isinstance(conn, HttpConnection):
            index = conn.send(msg, headers=headers, timeout=timeout)
            events = [e for e in conn.transcript.events[index:] if e.ref == index]
            reply_event = next((e for e in events if is_response_to(e, want)), None)
            if reply_event is None:
                # Over HTTP the pairing is by exchange, so a response with a wrong or null id
                # (a legacy server's "no session" error) still answers this request.
                reply_event = next((e for e in events if e.kind == "recv" and isinstance(e.message, dict)
                                    and ("result" in e.message or "error" in e.message)), None)
            other = next((e for e in events if e.kind in ("oversize", "noise")), None)
            event = reply_event or other
        else:
            index = conn.send(msg)
            event = conn.read_until(_page_event(index, want), timeout, since=index,
                                    awaited=f"response to {msg.get('method')}")
    if event is None:
        if not conn.alive():
            return Page(None, failure="no reply: the server closed its output (it exited?)"), None
        return Page(None, failure=f"no reply within {timeout:.3g} s"), None
    if event.kind == "oversize":
        return Page(None, failure=event.note or "over the frame cap", over_cap=cap), None
    if event.kind == "noise":
        return Page(None, failure=f"the page is not JSON: {event.note[:120]}"), None
    reply = event.message if isinstance(event.message, dict) else None
    result = reply.get("result") if reply is not None else None
    if not isinstance(result, dict):
        return Page(None, failure=describe_reply(reply)), reply
    size = event.raw_size() if event.held is not None else len(orjson.dumps(result))
    return Page(result, size, release=lambda: conn.transcript.let_go(event)), reply


def read_connection_list(conn: Connection, build: Callable[[str | None], dict[str, Any]], name: str,
                         method: str, key: str, *, timeout: float, budget: ListBudget,
                         spend: Spend | None = None, headers: dict[str, str] | None = None,
                         take: Take | None = None) -> ListRead:
    """`read_list` over a harness connection: `build(cursor)` makes each page's request."""

    def fetch(cursor: str | None, seconds_left: float, bytes_left: int) -> Page:
        page, _ = fetch_page(conn, build(cursor), timeout=min(timeout, seconds_left), bytes_left=bytes_left,
                             headers=headers)
        return page

    return read_list(fetch, name, method, key, budget, spend, take)


# --- the options that set a budget (probe, catalogue) ---


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-pages", type=int, default=DEFAULT_MAX_PAGES, metavar="N",
                        help=f"pages followed per list (default {DEFAULT_MAX_PAGES:,}, at most {MAX_PAGES_CEILING:,})")
    parser.add_argument("--max-list-mib", type=int, default=DEFAULT_LIST_MIB, metavar="MIB",
                        help=f"MiB of list pages one read of the lists may hold (default {DEFAULT_LIST_MIB}, "
                             f"at most {LIST_MIB_CEILING})")
    parser.add_argument("--list-seconds", type=float, default=DEFAULT_LIST_SECONDS, metavar="S",
                        help=f"seconds one read of the lists may take (default {DEFAULT_LIST_SECONDS:g}, "
                             f"at most {LIST_SECONDS_CEILING:g})")


def budget_from_args(args: argparse.Namespace) -> ListBudget:
    """The budget the options ask for; raises validate.InputError (one line) outside the range."""
    if not 1 <= args.max_pages <= MAX_PAGES_CEILING:
        raise validate.InputError(f"--max-pages must be from 1 to {MAX_PAGES_CEILING:,}, not {args.max_pages:,}")
    if not 1 <= args.max_list_mib <= LIST_MIB_CEILING:
        raise validate.InputError(f"--max-list-mib must be from 1 to {LIST_MIB_CEILING}, not {args.max_list_mib:,}")
    seconds = validate.seconds(args.list_seconds, "--list-seconds", maximum=LIST_SECONDS_CEILING)
    return ListBudget(args.max_pages, args.max_list_mib * MIB, seconds or DEFAULT_LIST_SECONDS)
