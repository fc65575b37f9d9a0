"""What one load process saw: exact histograms per name, failures by kind, MRTR counters.

The recorder is deliberately ignorant of Locust. A user records a sample here (and, separately,
fires Locust's request event so Locust's own CSV and HTML reports exist); a Locust worker drains
its recorder into the periodic report it sends to the master, and the master merges the drained
pieces back into its own recorder. Draining resets the counts, so each sample travels exactly
once and the merged result equals what a single process would have recorded.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.fuzz.reach import MAX_DISTINCT_TEXTS, shorten
from mcp_tempest.load.histogram import ExactHistogram

# Sample categories: a "request" is one HTTP POST (a plain call or one MRTR leg) and counts
# towards the run's request total; an "operation" is a whole MRTR unit of work made of legs.
REQUEST = "request"
OPERATION = "operation"
# An open-model arrival that waited for a free slot longer than the request timeout: never sent,
# counted as a timeout (a client with that timeout would have given up), not as a request.
BACKLOG = "backlog"
# Discovery (server/discover, the lists, the tool probe) a client makes before its workload: in
# the closed model each user's, in the open model the one shared by a process's slots. Counted as
# requests (and failures), shown by name, but left out of the overall percentiles and the
# timeline: it is not part of the workload, and the first request a fresh server serves is its
# slowest. Setup samples carry names of their own (`setup_name`), so a method that is both setup
# and workload (tools/list) is two names, each of one kind.
SETUP = "setup"
SETUP_PREFIX = "setup "
BACKLOG_NAME = "(arrival not sent: backlog)"
# Counter prefix: isError answers to a call whose handle argument (by name) the server returned.
REFUSED_HANDLE = "refused handle "
# The kinds of samples in the overall figures (percentiles, timeline, gates, objectives).
OVERALL_KINDS = (REQUEST, BACKLOG)
# Failure kinds of a request that got no answer at all (load/mcp_client.py names them).
TIMEOUT = "timeout"
CONNECTION = "connection"
UNANSWERED = (TIMEOUT, CONNECTION)
# Counter: requests in flight when the run started stopping that got no answer within their
# timeout (or STOP_GRACE_S after the stop): each is a timeout sample of its name.
NEVER_ANSWERED = "never_answered_at_stop"
# At the stop, how long (at most) the run waits for the requests it caught in flight: each may
# take its --timeout, as during the run, so a healthy server's answer is never a failure for
# arriving at the stop; one still unanswered then counts as a timeout (`give_up`).
STOP_GRACE_S = 10.0


def setup_name(name: str) -> str:
    return SETUP_PREFIX + name


@dataclass(frozen=True, slots=True)
class Waiting:
    """A request sent and not yet back."""

    name: str
    kind: str
    origin_ns: int  # its latency is timed from here (perf_counter_ns)
    sent_ns: int  # its timeout runs from here


class KindClash(ValueError):
    """One name recorded under two kinds: its figures would be counted in one set and not the other."""


@dataclass(slots=True)
class Second:
    """One second of the run: the latency of every request (and backlog timeout) completed in it."""

    latency: ExactHistogram = field(default_factory=ExactHistogram)
    failures: int = 0


@dataclass(slots=True)
class NameStats:
    kind: str
    latency: ExactHistogram = field(default_factory=ExactHistogram)
    first_event: ExactHistogram = field(default_factory=ExactHistogram)
    failures: Counter[str] = field(default_factory=Counter)
    # isError results: the tool ran and answered that it could not do it. An answer, not a
    # failure of the server (a correct server refuses an unknown calendarId this way), so it is
    # counted here, beside the failures, with its most frequent texts (fuzz/reach.py's tally).
    is_error: int = 0
    answers: Counter[str] = field(default_factory=Counter)

    def note_answer(self, text: str, n: int = 1) -> None:
        if text in self.answers or len(self.answers) < MAX_DISTINCT_TEXTS:
            self.answers[text] += n

    @property
    def count(self) -> int:
        return self.latency.count

    @property
    def failure_count(self) -> int:
        return sum(self.failures.values())


class Recorder:
    """Per-process (or merged, on the master) statistics of a load run."""

    def __init__(self) -> None:
        self.names: dict[str, NameStats] = {}
        self.failures: Counter[str] = Counter()  # kind -> count, each failure counted once
        self.violations: Counter[str] = Counter()  # rule id -> count
        self.violation_examples: dict[str, str] = {}  # rule id -> one human-readable example
        self.counters: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.excluded_tools: dict[str, str] = {}  # tool -> why the mix leaves it out
        self.list_cuts: dict[str, str] = {}  # list -> how discovery's read of it was cut short or failed
        self.mrtr_tools: set[str] = set()  # tools found to ask for input
        self.worker_max_in_flight: dict[str, int] = {}  # master only: each worker's peak
        self.started: float | None = None
        # Set when the run starts stopping. Stopping hundreds of users takes Locust a while, and a
        # request that completes meanwhile is timed with the harness's own teardown in it.
        self.closed = False
        self.stopped: float | None = None
        self.raw: list[tuple[str, int]] | None = None  # (name, ns) of every request, benchmarks only
        # Per wall-clock second (epoch, by completion): every request's latency and its failures,
        # for the live progress line and the report's charts. Seconds merge exactly across workers.
        self.timeline: dict[int, Second] = {}
        self.worker_in_flight: dict[str, int] = {}  # master only: each worker's current MRTR operations
        # Requests sent and not yet back: token -> (name, kind, timed from, sent at; perf_counter_ns).
        # A user Locust stops while it waits never returns from its request, so a request the
        # server never answered would otherwise be in no figure (a hung server's run read 0 failures).
        self.waiting: dict[int, Waiting] = {}
        self._tokens = itertools.count()
        self.at_stop: set[int] = set()  # the tokens waiting when the run started stopping
        self.last_answer: float | None = None  # epoch s of the last request that got an answer

    # --- recording (called from user greenlets; no yield inside, so no locking needed) ---

    def _stats(self, name: str, kind: str) -> NameStats:
        stats = self.names.get(name)
        if stats is None:
            stats = self.names[name] = NameStats(kind)
        elif stats.kind != kind:
            # Never silently file a sample under its name's first kind: that once dropped every
            # open-model tools/list arrival from the overall figures (it was first seen as setup).
            raise KindClash(f"{name!r} recorded as {kind} after {stats.kind}")
        return stats

    def record(
        self,
        name: str,
        elapsed_us: int,
        *,
        kind: str = REQUEST,
        failure: str | None = None,
        first_event_us: int | None = None,
        count_failure: bool = True,
        raw_ns: int | None = None,
        is_error: str | None = None,
    ) -> None:
        """One sample. `count_failure=False` marks a failure already counted where it happened
        (an operation that failed because one of its legs did), so the run total counts it once.
        `is_error`: the text of an isError result (the sample is an answer, not a failure)."""
        if self.closed:
            return  # the run is stopping: Locust is tearing the users down, nothing is measured
        self._add(name, elapsed_us, kind=kind, failure=failure, first_event_us=first_event_us,
                  count_failure=count_failure, raw_ns=raw_ns, is_error=is_error)

    def _add(self, name: str, elapsed_us: int, *, kind: str, failure: str | None = None,
             first_event_us: int | None = None, count_failure: bool = True, raw_ns: int | None = None,
             is_error: str | None = None) -> None:
        if self.started is None:
            self.started = time.time()
        stats = self._stats(name, kind)
        stats.latency.add(elapsed_us)
        if self.raw is not None and raw_ns is not None:
            self.raw.append((name, raw_ns))
        if first_event_us is not None:
            stats.first_event.add(first_event_us)
        if failure is not None:
            stats.failures[failure] += 1
            if count_failure:
                self.failures[failure] += 1
        if is_error is not None:
            stats.is_error += 1
            stats.note_answer(shorten(is_error[:400]))
        if kind in OVERALL_KINDS:
            sec = int(time.time())
            second = self.timeline.get(sec)
            if second is None:
                second = self.timeline[sec] = Second()
            second.latency.add(elapsed_us)
            if failure is not None:
                second.failures += 1

    # --- requests in flight, and those the stop caught waiting ---

    def sent(self, name: str, kind: str, origin_ns: int) -> int:
        """A request is on its way (named as it will be recorded, timed from `origin_ns`: the open
        model's intended start, else now); the token for `ended`."""
        token = next(self._tokens)
        self.waiting[token] = Waiting(name, kind, origin_ns, time.perf_counter_ns())
        return token

    def ended(self, token: int, failure: str | None) -> None:
        """The request came back (`failure`: its failure kind, None when it succeeded). One the
        stop caught waiting that came back without an answer is counted here, as the stop's."""
        entry = self.waiting.pop(token, None)
        if failure not in UNANSWERED:
            self.last_answer = time.time()
        if token in self.at_stop:
            self.at_stop.discard(token)
            if entry is not None and failure in UNANSWERED:
                self._never_answered(entry, str(failure), time.perf_counter_ns())

    def forget(self, token: int) -> None:
        """The request ended in an error of the harness's own: no answer, and not the server's."""
        self.waiting.pop(token, None)
        self.at_stop.discard(token)

    def close(self) -> None:
        """The run starts stopping: nothing is measured from now on, except what becomes of the
        requests waiting now (`ended`, `give_up`)."""
        self.closed = True
        self.at_stop = set(self.waiting)

    def stop_deadline_ns(self, timeout_ns: int, grace_ns: int) -> int:
        """Until when the stop waits for its waiting requests: each may take its timeout, as
        during the run (a healthy server's answer is not a failure for arriving at the stop),
        but all together no longer than `grace_ns` from now."""
        now = time.perf_counter_ns()
        ends = [self.waiting[t].sent_ns + timeout_ns for t in self.at_stop if t in self.waiting]
        return min(now + grace_ns, max(ends, default=now))

    def give_up(self) -> int:
        """Every request the stop caught waiting that is waiting still: a timeout sample of its
        name, timed to now (at least this long unanswered). Returns how many."""
        now = time.perf_counter_ns()
        left = [self.waiting.pop(t) for t in sorted(self.at_stop) if t in self.waiting]
        self.at_stop = set()
        for entry in left:
            self._never_answered(entry, TIMEOUT, now)
        return len(left)

    def _never_answered(self, entry: Waiting, failure: str, now_ns: int) -> None:
        self._add(entry.name, max(0, (now_ns - entry.origin_ns + 500) // 1000), kind=entry.kind, failure=failure)
        self.counters[NEVER_ANSWERED] += 1

    def violation(self, rule: str, example: str) -> None:
        self.violations[rule] += 1
        self.violation_examples.setdefault(rule, example)

    def count(self, counter: str, times: int = 1) -> None:
        if not self.closed:  # counted with the samples they belong to, or not at all
            self.counters[counter] += times

    def operation_opened(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def operation_closed(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)

    # --- totals ---

    @property
    def requests(self) -> int:
        return sum(s.count for s in self.names.values() if s.kind in (REQUEST, SETUP))

    @property
    def is_error_total(self) -> int:
        """isError results among the requests (an operation's are its final leg's, not twice)."""
        return sum(s.is_error for s in self.names.values() if s.kind in (REQUEST, SETUP))

    @property
    def failure_total(self) -> int:
        return sum(self.failures.values())

    def merged_requests(self) -> ExactHistogram:
        """Every request sample in one histogram, for the run's overall percentiles (with the
        open model's backlog timeouts: an arrival never sent is still a wait a client saw)."""
        total = ExactHistogram()
        for stats in self.names.values():
            if stats.kind in OVERALL_KINDS:
                total.merge(stats.latency)
        return total

    # --- wire form (worker -> master), drained so every sample travels once ---

    def drain(self) -> dict[str, Any]:
        data = {
            "names": {
                name: {
                    "kind": s.kind,
                    "lat": s.latency.to_wire(),
                    "first": s.first_event.to_wire(),
                    "fail": dict(s.failures),
                    "err": s.is_error,
                    "answers": dict(s.answers),
                }
                for name, s in self.names.items()
                if s.count or s.failures
            },
            "failures": dict(self.failures),
            "violations": dict(self.violations),
            "violation_examples": dict(self.violation_examples),
            "counters": dict(self.counters),
            "max_in_flight": self.max_in_flight,
            "excluded_tools": dict(self.excluded_tools),
            "list_cuts": dict(self.list_cuts),
            "mrtr_tools": sorted(self.mrtr_tools),
            "in_flight": self.in_flight,
            "last_answer": self.last_answer,
            "timeline": [[sec, s.latency.to_wire(), s.failures] for sec, s in self.timeline.items()],
        }
        self.timeline = {}
        self.names = {}
        self.failures = Counter()
        self.violations = Counter()
        self.counters = Counter()
        self.max_in_flight = self.in_flight
        return data

    def merge_wire(self, data: dict[str, Any], *, source: str = "") -> None:
        for name, entry in (data.get("names") or {}).items():
            stats = self._stats(name, entry.get("kind", REQUEST))
            stats.latency.merge(ExactHistogram.from_wire(entry.get("lat") or []))
            stats.first_event.merge(ExactHistogram.from_wire(entry.get("first") or []))
            stats.failures.update(entry.get("fail") or {})
            stats.is_error += int(entry.get("err") or 0)
            for text, n in (entry.get("answers") or {}).items():
                stats.note_answer(text, int(n))
        self.failures.update(data.get("failures") or {})
        self.violations.update(data.get("violations") or {})
        for rule, example in (data.get("violation_examples") or {}).items():
            self.violation_examples.setdefault(rule, example)
        self.counters.update(data.get("counters") or {})
        self.excluded_tools.update(data.get("excluded_tools") or {})
        self.list_cuts.update(data.get("list_cuts") or {})
        self.mrtr_tools.update(data.get("mrtr_tools") or [])
        for sec, lat, failures in data.get("timeline") or []:
            second = self.timeline.get(int(sec))
            if second is None:
                second = self.timeline[int(sec)] = Second()
            second.latency.merge(ExactHistogram.from_wire(lat))
            second.failures += int(failures)
        last = data.get("last_answer")
        if isinstance(last, int | float):
            self.last_answer = max(self.last_answer or 0.0, float(last))
        self.worker_in_flight[source] = int(data.get("in_flight") or 0)
        peak = int(data.get("max_in_flight") or 0)
        self.worker_max_in_flight[source] = max(self.worker_max_in_flight.get(source, 0), peak)

    def in_flight_total(self) -> int:
        """MRTR operations open now: this process's, plus each worker's at its last report."""
        return self.in_flight + sum(self.worker_in_flight.values())

    def window(self, first_sec: int, last_sec: int) -> tuple[ExactHistogram, int]:
        """Requests completed in the seconds [first_sec, last_sec]: their latencies and failures."""
        hist, failures = ExactHistogram(), 0
        for sec in range(first_sec, last_sec + 1):
            second = self.timeline.get(sec)
            if second is not None:
                hist.merge(second.latency)
                failures += second.failures
        return hist, failures

    def max_in_flight_total(self) -> int:
        """Peak MRTR operations in flight: this process's own, plus each worker's peak summed
        (an upper bound across processes, since their peaks need not coincide)."""
        return self.max_in_flight + sum(self.worker_max_in_flight.values())
