"""One job, one property over one transport, as a short list of phases over one shared state.

Why phases: each way a job plays cases has its own source of cases and its own stopping rule,
and they share everything else (the budget, the known groups, the reach tallies, the one place
a played case becomes evidence). `JobRun.judge` is that one place; the phases are

1. coverage: the property's named probes, each once, in a fixed order (they count as examples),
   batched; a batch that fails is split and each of its probes judged alone;
2. replay: failures in the example database are played again and reported as known;
3. corpus: examples earlier runs saved because they drew a new kind of answer (reach guidance);
4. explore: Hypothesis rounds; each generates at random and shrinks what it found before the
   round ends. A failure whose group is already known (from the baseline, the replay, the
   coverage phase or an earlier round) is filed but does not stop the round; a new one is
   shrunk, and a new round explores on with that group known too, until the examples or the
   time are spent.

With `--stop-on-first`: coverage (up to its first failure), then one Hypothesis run that replays,
generates and stops at its first failure, shrinking it.

Shrinking stays inside the round that found the failure: Hypothesis shrinks from its own engine
state, and a later run started from the example database takes a saved failure as already
shrunk (its reuse phase does not shrink what the primary key holds).

Every phase says how it ended: "" (done), "budget" (its share is spent; the next phase may still
run what is cheap), a reason the job stops ("abort", "stopped", "halted", "error: ..."), or None
when it played nothing that changes how the job ended (no database to replay, no corpus).
"""

from __future__ import annotations

import contextlib
import math
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings

from mcp_tempest.fuzz.differences import RULE as DIFFERENCE_RULE
from mcp_tempest.fuzz.differences import difference_violation, differences
from mcp_tempest.fuzz.findings import Evidence, PropertyRun, finding_id
from mcp_tempest.fuzz.hypothesis_compat import (
    ExampleDatabase,
    choices_to_bytes,
    current_build_context,
    draw_from_choices,
    encode_failure,
    end_generation,
    running_phase,
    set_database_key,
    set_seed,
    shrink_time_limit,
    skip_local_constants,
)
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.executor import Endpoint, HarnessError, Run, execute
from mcp_tempest.fuzz.properties.judging import (
    bucket_of,
    evidence_for,
    judge_run,
    primary,
    slow_note,
    slowest_in_allowance,
)
from mcp_tempest.fuzz.properties.surface import sample_value
from mcp_tempest.fuzz.reach import Reach
from mcp_tempest.fuzz.reach_corpus import ReachCorpus, corpus_key
from mcp_tempest.targets import stop_request
from mcp_tempest.targets.processes import coverage_context

#: --guidance: "corpus" keeps examples that drew a new kind of answer in the example database and
#: plays them first next run (fuzz/reach_corpus.py); "target" also steers Hypothesis towards them
#: within a run (hypothesis.target on the number of new kinds an example drew).
GUIDANCE_CHOICES = ("corpus", "target")
DEFAULT_GUIDANCE: tuple[str, ...] = ("corpus",)
#: The example-database key prefix under which coverage-phase failures are remembered across runs.
COVERAGE_KEY_PREFIX = b"mcp-tempest/coverage-failures:"
#: How many of the latest generated examples `JobState.reuse_warm` weighs.
RECENT_EXAMPLES = 20
STOPPED_NOTE = "stopped: the target stopped answering (reported once)"
HALTED_PREFIX = "halted: "
#: Why a probe sent in a batch that failed has no verdict of its own: the job's time ran out before
#: it was played alone (with --max-examples only, every such probe is played alone).
NOT_JUDGED_ALONE = "not judged alone: the budget ran out (its batch failed; raise --duration)"
NO_BUDGET_NOTE = "not run: the jobs before it spent the --max-examples budget (raise --max-examples)"
#: How a phase ended, when the job goes on to its next phase.
GOES_ON = ("", "budget")


def halted_note(rule: str) -> str:
    return f"{HALTED_PREFIX}{rule} was found (--stop-on-rule); the properties after this one did not run"


@dataclass(slots=True)
class Job:
    property: str
    transport: str
    target: str
    max_examples: int
    seconds: float | None
    shrink_seconds: float
    seed: int

    @property
    def label(self) -> str:
        return f"{self.property}[{self.transport}]"


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What the coverage phase did with one probe on one transport: sent it, or why not."""

    property: str
    transport: str
    name: str
    rule: str
    tried: bool
    why_not: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"property": self.property, "transport": self.transport, "probe": self.name,
                               "rule": self.rule, "tried": self.tried}
        if self.why_not:
            out["why_not"] = self.why_not
        return out


class Sink(Protocol):
    def record(self, ev: Evidence) -> bool: ...
    def examples(self, n: int) -> None: ...
    def job_started(self, job: Job) -> None: ...
    def job_done(self, run: PropertyRun) -> None: ...
    def probes(self, outcomes: list[ProbeOutcome], replayed: list[str]) -> None: ...


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a job; carries what the job did up to then, so the summary can say it."""

    def __init__(self, record: PropertyRun) -> None:
        super().__init__()
        self.record = record


class _Failure(Exception):
    """Base of the per-bucket failures Hypothesis sees; one subclass per bucket."""


_FAILURE_TYPES: dict[tuple[str, str, str, str], type[_Failure]] = {}


def _failure_type(bucket: tuple[str, str, str, str]) -> type[_Failure]:
    found = _FAILURE_TYPES.get(bucket)
    if found is None:
        name = "Finding_" + "_".join(part.replace("/", "_").replace("-", "_") or "x" for part in bucket)
        found = type(name, (_Failure,), {"bucket": bucket})
        _FAILURE_TYPES[bucket] = found
    return found


# A failure as Hypothesis is told of it: its exception type (one per bucket), message and group.
Failure = tuple[type[_Failure], str, str]


class _Budget(BaseException):  # noqa: N818 - a control-flow signal
    """The job's time is up: leaves Hypothesis at once, keeping what was found."""


class _Stopped(BaseException):  # noqa: N818 - a control-flow signal
    """The target stopped answering (Run.stopped_answering): reported once, the property ends."""


class _Halted(BaseException):  # noqa: N818 - a control-flow signal
    """A finding of a --stop-on-rule rule was filed: this job ends, and the campaign after it."""


class _Abort(BaseException):  # noqa: N818 - a control-flow signal, not an error to report
    """Leaves Hypothesis at once (the harness cannot go on); never a finding."""


def _tool_call_params(run: Run, step: int) -> dict[str, Any] | None:
    """The params of the step's frame when it is a tools/call with object params, else None."""
    frame = run.frames.get(step)
    params = frame.get("params") if isinstance(frame, dict) and frame.get("method") == "tools/call" else None
    return params if isinstance(params, dict) else None


def group_of(ev: Evidence) -> str:
    """The id a finding's group goes by in --known baselines and in "known" reports: the id
    fuzz/findings.py gives the finding this evidence joins (one root cause, one id)."""
    return finding_id(*ev.group_key())


@dataclass(slots=True)
class JobState:
    """What one job has spent and found so far, across its phases."""

    cap: int  # examples this job may generate (coverage probes included)
    hard_deadline: float  # with --duration: the end of the job's share, shrinking included
    shrink_reserve: float  # with --duration: the end of the share kept for shrinking once a failure is seen
    shrink_budget: float  # seconds for shrinking, confirmations and replays together (--shrink-time)
    generated: int = 0
    shrinks: int = 0
    replays: int = 0
    aside_seconds: float = 0.0
    failures: int = 0  # confirmed failures filed by Hypothesis rounds (not known groups)
    round_failures: int = 0
    known: set[str] = field(default_factory=set)  # group ids not to stop for (baseline, replayed, found)
    replayed: set[str] = field(default_factory=set)  # groups the example database brought back
    new_groups: set[str] = field(default_factory=set)  # groups found in the current round
    cache: dict[bytes, Failure] = field(default_factory=dict)
    passed: set[bytes] = field(default_factory=set)
    harness_error: str = ""
    stopped: str = ""  # why the target stopped answering, once it did
    slowest: tuple[float, str] | None = None  # the slowest answer past the step timeout (seconds, what)
    timeout: float = 0.0  # the step timeout (--timeout) the job's examples are played with
    halted: str = ""  # the --stop-on-rule rule whose finding ended the job
    engine: list[Any] = field(default_factory=list)  # the running ConjectureRunner (hypothesis_compat)
    probes: list[ProbeOutcome] = field(default_factory=list)
    # whether each of the latest examples of each kind failed (see reuse_warm)
    recent_generated: deque[bool] = field(default_factory=lambda: deque(maxlen=RECENT_EXAMPLES))
    recent_aside: deque[bool] = field(default_factory=lambda: deque(maxlen=RECENT_EXAMPLES))
    reach: Reach = field(default_factory=Reach)  # how the job's valid tools/call steps were answered
    new_kinds: int = 0  # kinds of answer the example being judged drew that no earlier one did

    def may_generate(self, now: float) -> bool:
        limit = self.hard_deadline - (self.shrink_reserve if self.round_failures else 0.0)
        return self.generated < self.cap and now < limit

    def may_aside(self, now: float) -> bool:
        return self.aside_seconds < self.shrink_budget and now < self.hard_deadline

    def reuse_warm(self, fresh_per_example: int, *, aside: bool) -> bool:
        """Whether an example may play on the warm process. A warm run that fails is played again
        on fresh processes (so what Hypothesis shrinks is reproducible from the case alone): it
        costs three processes or more where a fresh-only run costs two, and one that passes costs
        one. So once a property that spawns per example has failed, its examples stay warm while
        fewer than half of the recent ones of their kind (generated, or shrink candidates and
        replays) failed (measured on the Python SDK server's history bug, a third was dearer);
        shrink candidates start fresh-only, being near a failure."""
        if not fresh_per_example or not self.failures:
            return True
        recent = self.recent_aside if aside else self.recent_generated
        if aside and len(recent) < RECENT_EXAMPLES // 4:
            return False
        return 2 * sum(recent) < len(recent)


class _WriteOnlyDatabase(ExampleDatabase):
    """The example database as the explore rounds see it: new failures are saved for the next
    run, nothing is replayed (the replay phase did that, once, and reported them as known)."""

    def __init__(self, db: ExampleDatabase) -> None:
        super().__init__()
        self.db = db

    def fetch(self, key: bytes) -> Any:
        return iter(())

    def save(self, key: bytes, value: bytes) -> None:
        self.db.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.db.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.db.move(src, dest, value)


def _flatten(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_flatten(exc))
        else:
            out.append(exc)
    return out


# How a phase ended, for each control-flow signal a played case raises.
_SIGNAL_ENDINGS: dict[type[BaseException], str] = {_Abort: "abort", _Stopped: "stopped", _Halted: "halted",
                                                   _Budget: "budget"}


class JobRun:
    """One job in progress: its state, the one way every phase plays a case (`judge`), and the
    phases themselves."""

    def __init__(self, job: Job, prop: Property, endpoint: Endpoint, ctx: Context, sink: Sink, *,
                 database: ExampleDatabase | None, timeout: float, known: frozenset[str],
                 stop_on_rules: frozenset[str], guidance: tuple[str, ...],
                 other: tuple[Endpoint, str] | None = None) -> None:
        self.job, self.prop, self.endpoint, self.ctx, self.sink = job, prop, endpoint, ctx, sink
        # --compare-target: the endpoint every case is also played on, and its target's text
        self.other = other
        self.database, self.timeout, self.guidance = database, timeout, guidance
        self.stop_on_rules = stop_on_rules
        self.started = time.monotonic()
        share = job.seconds if job.seconds is not None else math.inf
        self.state = JobState(
            cap=job.max_examples, hard_deadline=self.started + share,
            shrink_reserve=min(job.shrink_seconds, share * 0.3) if job.seconds is not None else 0.0,
            shrink_budget=job.shrink_seconds, known=set(known), timeout=timeout)
        self.known_before = frozenset(known)
        self.listed = (frozenset(str(t.get("name")) for t in ctx.surface.tools)
                       | frozenset(ctx.surface.withheld_tools))
        self.corpus = ReachCorpus(database if "corpus" in guidance else None,
                                  corpus_key(job.property, job.transport, job.target))
        self.hypothesis_version = hypothesis.__version__

        def body(case: Any) -> None:
            failure = self._outcome(case)
            if failure is not None:
                # One raise site for fresh and cached failures: Hypothesis tells bugs apart by the
                # exception's type *and* the line it was raised on.
                exc_type, message, _group = failure
                raise exc_type(message)

        # The example database is keyed by property, transport and target (Hypothesis hashes the
        # function and this digest), so workers and later campaigns on the same target share it.
        # A function of its own, not a bound method: Hypothesis sets attributes on it.
        set_database_key(body, f"{job.property}|{job.transport}|{job.target}".encode())
        self._body = body

    # --- the phases ---

    def phases(self, stop_on_first: bool) -> list[Callable[[], str | None]]:
        if stop_on_first:
            return [lambda: self.coverage(first_only=True), self.first_failure]
        return [self.coverage, self.replay, self.corpus_replay, self.explore]

    def coverage(self, *, first_only: bool = False) -> None:
        """Send each of the property's named probes once, in order, batched as the property
        allows; a batch that passes is each probe's verdict, one that fails is played again probe
        by probe (`_judge_alone`), so every probe counted as tried has its own verdict (the clean
        path costs one example per batch). What fails here is known to the phases that follow.
        `first_only` (--stop-on-first): the phase ends at its first failure, as the property does.

        A probe is no Hypothesis example, so its failure cannot be saved as one; the groups it
        filed are kept in the example database under a key of their own instead, and when the
        same probe fails the same way in a later run sharing the database, that group is reported
        as a known failure the database brought back, as a replayed example's would be."""
        job, state, database = self.job, self.state, self.database
        key = COVERAGE_KEY_PREFIX + zlib.crc32(
            f"{job.property}|{job.transport}|{job.target}".encode()).to_bytes(4, "big")
        earlier: set[str] = set()
        if database is not None:
            with contextlib.suppress(Exception):
                earlier = {v.decode("utf-8", "replace") for v in database.fetch(key)}

        def remember(group: str) -> None:
            state.known.add(group)
            if group in earlier:
                state.replayed.add(group)
            elif database is not None:
                with contextlib.suppress(Exception):
                    database.save(key, group.encode())

        probes = self.prop.coverage(self.ctx)
        ready = [p for p in probes if p.case is not None]
        for p in probes:
            if p.case is None:
                self._probe_outcome(p, p.why_not)
        size = max(self.prop.coverage_batch, 1)
        why_left = ""  # why the probes left without a verdict have none, when the phase says so
        try:
            for start in range(0, len(ready), size):
                batch = ready[start:start + size]
                if not state.may_generate(time.monotonic()):
                    why = ("the time share ran out first" if state.generated < state.cap
                           else "the example budget ran out first (raise --max-examples)")
                    for p in batch:
                        self._probe_outcome(p, why)
                    continue
                if len(batch) == 1:
                    failure = self._judge_probe(batch[0], "coverage")
                    if failure is not None:
                        remember(failure[2])
                else:
                    failure = self.judge(self.prop.combine(batch), phase="coverage", blob=None, record=False)
                    if failure is None:
                        for p in batch:
                            self._probe_outcome(p)
                    else:
                        failure = self._judge_alone(batch, remember, first_only)
                if first_only and failure is not None:
                    why_left = "not sent: the property stopped at its first failure (--stop-on-first)"
                    return
        finally:
            # The job may end inside the phase (the target stopped answering, --stop-on-rule, a
            # harness error, Ctrl-C): its probes still get an outcome, none counted as tried.
            judged = {o.name for o in state.probes}
            for p in ready:
                if p.name not in judged:
                    self._probe_outcome(p, why_left or self._why_ended())

    def _judge_alone(self, batch: list[Probe], remember: Callable[[str], None], first_only: bool) -> Failure | None:
        """A failing batch, probe by probe, so that each probe gets its own verdict and a failing
        one is filed in the group of its own behaviour: a finding names exactly the probes that
        fail alone. Bounded by the job's time (what a --duration leaves it), not by --shrink-time,
        so no budget but the campaign's decides which probes are judged; one not judged alone is
        reported so, not counted as tried. Returns the first probe's failure. When none fails
        alone, the batch's failure was an interplay of its probes: not filed here (no probe can
        be named for it), and random examples, which send several malformed frames, may meet it."""
        first: Failure | None = None
        for p in batch:
            if first is not None and first_only:
                self._probe_outcome(p, "not judged alone: the property stopped at its first failure "
                                       "(--stop-on-first)")
            elif time.monotonic() >= self.state.hard_deadline:
                self._probe_outcome(p, NOT_JUDGED_ALONE)
            else:
                failure = self._judge_probe(p, "split")
                if failure is not None:
                    remember(failure[2])
                    first = first or failure
        return first

    def _judge_probe(self, probe: Probe, phase: str) -> Failure | None:
        """One probe on its own (filed as its own finding when it fails); it counts as tried once
        judged, even when its failure ends the job (its evidence is filed before the signal)."""
        try:
            failure = self.judge(probe.case, phase=phase, blob=None)
        except (_Stopped, _Halted):
            self._probe_outcome(probe)
            raise
        self._probe_outcome(probe)
        return failure

    def _probe_outcome(self, probe: Probe, why_not: str = "") -> None:
        """A probe's outcome for the coverage report: tried (judged on its own), or why not."""
        self.state.probes.append(ProbeOutcome(self.job.property, self.ctx.transport, probe.name, probe.rule,
                                              not why_not, why_not))

    def _why_ended(self) -> str:
        if self.state.stopped:
            return "not judged: the target stopped answering"
        if self.state.halted:
            return f"not judged: {self.state.halted} was found (--stop-on-rule)"
        return "not judged: the job ended first"

    def replay(self) -> str | None:
        """Failures an earlier run saved in the example database, played once; reported as known."""
        if self.database is None:
            return None
        return self.hypothesis_round((Phase.reuse,), self.database, 1, self.job.seed)

    def corpus_replay(self) -> None:
        """Play what earlier runs sharing the example database saved because it drew a new kind
        of answer (each counts as an example); an entry the strategy no longer draws is dropped.
        A failure here is filed and known to the rounds that follow, as a coverage probe's is."""
        entries = self.corpus.entries()
        if not entries:
            return
        strategy = self.prop.cases(self.ctx)
        for blob in entries:
            if not self.state.may_generate(time.monotonic()):
                return
            drawn = draw_from_choices(strategy, blob)
            if drawn is None:
                self.corpus.drop(blob)
                continue
            case, choices = drawn
            failure = self.judge(case, phase="corpus", blob=encode_failure(choices).decode("ascii"))
            self.corpus.replayed += 1
            if failure is not None:
                self.state.known.add(failure[2])

    def explore(self) -> str | None:
        """Hypothesis rounds until the examples or the time are spent, or a round finds nothing
        new; each round knows the groups the earlier ones found, so it explores past them."""
        state, database = self.state, self.database
        ended: str | None = None
        round_no = 0
        while (ended is None or ended in GOES_ON) and state.may_generate(time.monotonic()):
            now = time.monotonic()
            phases = (Phase.generate, Phase.shrink) if state.may_aside(now) else (Phase.generate,)
            if "target" in self.guidance:
                phases = (Phase.generate, Phase.target, *phases[1:])
            before = state.generated
            ended = self.hypothesis_round(phases, _WriteOnlyDatabase(database) if database is not None else None,
                                          state.cap - state.generated, (self.job.seed + round_no) % (2**32))
            round_no += 1
            if not state.new_groups or state.generated == before:
                break  # nothing new: Hypothesis spent the examples, the time or its search space
            state.known |= state.new_groups
        return ended

    def first_failure(self) -> str | None:
        """--stop-on-first: one Hypothesis run that stops at the first failure and shrinks it,
        unless the coverage phase already found this property's first failure."""
        if self.state.known - self.known_before:
            return None
        return self.hypothesis_round((Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), self.database,
                                     self.state.cap - self.state.generated, self.job.seed, multiple=False)

    # --- playing one case ---

    def _attribute(self, tool: str, arguments: dict[str, Any]) -> str:
        schema = (self.ctx.surface.tool(tool) or {}).get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        return self.ctx.surface.sources.attribute(tool, arguments, props if isinstance(props, dict) else None,
                                                  plain=sample_value)

    def _play(self, case: Any, *, reuse_now: bool) -> tuple[Run, list[Violation]]:
        state = self.state
        run = execute(case, self.endpoint, reuse=reuse_now, timeout=self.timeout)
        state.reach.add_run(run, self.listed, self._attribute)
        state.new_kinds += self.corpus.observe(run)
        slow = slowest_in_allowance(run)
        if slow is not None:
            state.slowest = max(slow, state.slowest) if state.slowest else slow
        violations = judge_run(self.prop, run, self.ctx)
        if not violations and self.other is not None:
            violations = self._compare(case, run, reuse_now=reuse_now)
        return run, violations

    def _compare(self, case: Any, run: Run, *, reuse_now: bool) -> list[Violation]:
        """--compare-target: the case played on the other target too; a difference of behaviour
        is a violation of its own kind (fuzz/differences.py), judged only where the target
        fuzzed broke no rule (a protocol finding explains its own answers)."""
        assert self.other is not None
        endpoint, name = self.other
        other_run = execute(case, endpoint, reuse=reuse_now, timeout=self.timeout)
        found = [d for d in differences(run, other_run)
                 if not self._from_own_state(run, d.step) and not self._served_unknown_tool(run, d.step)]
        if not found:
            return []
        run.run_values["differences"] = {"target": name, "found": [d.to_json() for d in found],
                                         "transcript": other_run.transcript}
        return [difference_violation(found, run, name)]

    def judge(self, case: Any, *, phase: str, blob: str | None, record: bool = True) -> Failure | None:
        """Play one case and file what it broke (unless `record` is False: a coverage batch is
        filed probe by probe); returns the failure when Hypothesis should see it."""
        stop_request.stop_point()
        state, prop, transport, sink = self.state, self.prop, self.ctx.transport, self.sink
        aside = phase in ("reuse", "shrink", "split")
        t0 = time.monotonic()
        try:
            run, violations = self._play(case, reuse_now=state.reuse_warm(prop.fresh_per_example, aside=aside))
            (state.recent_aside if aside else state.recent_generated).append(bool(violations))
            if aside:
                if phase == "reuse":
                    state.replays += 1
                else:
                    state.shrinks += 1
            else:
                state.generated += 1
                sink.examples(1)
            if not violations:
                return None
            main = primary(violations, run)
            bucket = bucket_of(run, main, transport)
            self.endpoint.discard_warm()  # it took part in a failure: the next example starts on a clean one
            if self.other is not None:
                self.other[0].discard_warm()
            confirmed = True
            if run.reused:
                # Seen on a process that served earlier examples: play it again on fresh ones. Only a
                # failure that survives this counts for Hypothesis (so what it shrinks is reproducible
                # from the case alone); one that does not is still filed, with a note saying so.
                t1 = time.monotonic()
                run2, violations2 = self._play(case, reuse_now=False)
                state.shrinks += 1
                if not aside:
                    state.aside_seconds += time.monotonic() - t1
                # The same bug seen again confirms it, whichever violation ranks first this time and
                # whichever method it is located at (a notification's is only the nearest request's).
                same = (bucket[0], bucket[2], bucket[3])
                again = [v for v in violations2
                         if (lambda b: (b[0], b[2], b[3]))(bucket_of(run2, v, transport)) == same]
                if again:
                    run, violations, main = run2, violations2, again[0]
                else:
                    confirmed = False
        except HarnessError as exc:
            state.harness_error = str(exc)
            raise _Abort() from None
        finally:
            # A split coverage batch is the coverage phase's own work, bounded by the job's time
            # (JobRun._judge_alone): it spends nothing of --shrink-time.
            if aside and phase != "split":
                state.aside_seconds += time.monotonic() - t0
        note = "" if confirmed else (
            "seen only on a process that had served earlier examples; fresh processes did not show it, "
            "so a replay may pass")
        if phase == "reuse":
            note = (note + "; " if note else "") + "replayed from the example database (known)"
        elif phase in ("coverage", "split"):
            note = (note + "; " if note else "") + (
                "found by the coverage phase (a fixed probe, not a Hypothesis example): no reproduce blob, "
                "the case itself is the reproduction")
        # Only the primary violation is filed: the others are in the evidence, and when they are
        # bugs of their own, other examples make them primary (often they are consequences of it).
        evidence = evidence_for(run, violations, main, prop=prop, transport=transport, blob=blob,
                                hypothesis_version=self.hypothesis_version if blob else None, note=note,
                                confirmed=confirmed)
        if main.rule == DIFFERENCE_RULE:  # what the other target answered, for the reports and replay
            compared = run.run_values.get("differences") or {}
            evidence.case["compare"] = {"target": compared.get("target", ""), "differences": compared.get("found", []),
                                        "transcript": compared["transcript"].to_json() if "transcript" in compared
                                        else {}}
        group = group_of(evidence)
        # A target that stopped answering is filed at once, even from a coverage batch: nothing
        # after this example gets a chance to file it (the property stops here).
        if record or run.stopped_answering is not None:
            sink.record(evidence)
            # only a confirmed finding ends the campaign: an unconfirmed one is an observation
            hit = self.stop_on_rules & {evidence.rule, evidence.probe_rule or evidence.rule} if confirmed else set()
            if hit:
                state.halted = min(hit)
                raise _Halted()
        if run.stopped_answering is not None:
            state.stopped = run.stopped_answering
            raise _Stopped()  # filed once above; more examples would only time out again
        if not confirmed:
            return None
        return _failure_type(bucket), f"{main.strength} {main.rule}: {main.title}", group

    def _from_own_state(self, run: Run, step: int) -> bool:
        """Whether a tool call's arguments hold values the target fuzzed returned earlier (a
        handle minted in its own store): the other target's store never held them, so its
        answer shows state, not behaviour, and the step is not compared. Values a case mints
        itself (its bindings) are each run's own and stay compared."""
        params = _tool_call_params(run, step)
        if params is None or not isinstance(params.get("arguments"), dict):
            return False
        used = self._attribute(str(params.get("name")), params["arguments"])
        return "returned" in used

    def _served_unknown_tool(self, run: Run, step: int) -> bool:
        """Whether the target fuzzed answered a call of a tool it does not list with a result:
        TOOL-09's deviation (judged by its probe, which lists every page first), so a campaign
        that files TOOL-09 does not file the same answer again as a difference. A target that
        refuses the unknown tool as it should still differs from one that does not."""
        params = _tool_call_params(run, step)
        answer = run.responses.get(step)
        return (params is not None and str(params.get("name")) not in self.listed
                and isinstance(answer, dict) and "result" in answer)

    # --- inside Hypothesis ---

    def _outcome(self, case: Any) -> Failure | None:
        state = self.state
        build = current_build_context()
        key = choices_to_bytes(build.data.choices)
        phase = running_phase(state.engine)
        cached = state.cache.get(key)
        if cached is not None:
            return None if cached[2] in state.known else cached
        if key in state.passed:
            return None
        if not build.is_final:
            now = time.monotonic()
            if phase in ("generate", "target"):
                if not state.may_generate(now):
                    if not state.round_failures:
                        raise _Budget()
                    # leave the generate phase for the shrink phase; this example is rejected
                    end_generation(state.engine)
                    hypothesis.reject()
            elif not state.may_aside(now):
                raise _Budget()
        blob = encode_failure(build.data.choices).decode("ascii")
        state.new_kinds = 0
        failure = self.judge(case, phase=phase, blob=blob)
        if phase in ("generate", "target") and state.new_kinds:
            self.corpus.save(choices_to_bytes(build.data.choices))
            if "target" in self.guidance:
                hypothesis.target(float(state.new_kinds), label="new kinds of answer")
        if failure is None:
            state.passed.add(key)
            return None
        group = failure[2]
        if phase == "reuse":
            state.replayed.add(group)
        elif group in state.known:
            state.passed.add(key)
            return None  # filed (counted, smaller evidence kept); exploring goes on past it
        else:
            state.new_groups.add(group)
            state.failures += 1
            state.round_failures += 1
        state.cache[key] = failure
        return failure

    def hypothesis_round(self, phases: tuple[Phase, ...], db: ExampleDatabase | None, max_examples: int,
                         seed: int, *, multiple: bool = True) -> str:
        """One Hypothesis run over the property's cases; returns how it ended (see the module)."""
        state = self.state
        state.engine.clear()
        state.round_failures = 0
        state.new_groups = set()
        test_settings = settings(  # no @seed: it would switch the example database off; the seed is set below
            max_examples=max(max_examples, 1), database=db, deadline=None, derandomize=False,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=multiple, print_blob=False,
            phases=phases, verbosity=Verbosity.quiet,
        )
        seeded = test_settings(given(self.prop.cases(self.ctx))(self._body))
        set_seed(seeded, seed)
        try:
            seeded()
        except (_Failure, hypothesis.errors.Unsatisfiable):
            return ""
        except (_Budget, _Abort, _Stopped, _Halted) as exc:
            return _SIGNAL_ENDINGS[type(exc)]
        except BaseExceptionGroup as group:
            flat = _flatten(group)
            if any(isinstance(e, KeyboardInterrupt) for e in flat):
                raise KeyboardInterrupt from None
            others = [e for e in flat if not isinstance(e, _Failure)]
            for kind in (_Stopped, _Halted, _Budget):
                if any(isinstance(e, kind) for e in others):
                    return _SIGNAL_ENDINGS[kind]
            if others:
                return f"error: {type(others[0]).__name__}: {others[0]}"
        except BaseException as exc:
            # A replay round on an empty database: Hypothesis "skips" a test it was told to run
            # no example of (unittest's SkipTest, or pytest's Skipped inside pytest).
            if type(exc).__name__ in ("SkipTest", "Skipped"):
                return ""
            raise
        return ""

    # --- the end ---

    def record(self, ended: str, *, interrupted: bool = False, error: str = "") -> PropertyRun:
        """What the job did, as the summary reports it; handed to the sink."""
        job, state, corpus = self.job, self.state, self.corpus
        note = ""
        if ended == "budget" and job.seconds is not None:
            note = "stopped at its time share"
        elif ended == "abort":
            error = error or state.harness_error or "the harness could not continue"
        elif ended.startswith("error: "):
            error = error or ended.removeprefix("error: ")
        elif ended == "stopped":
            note = STOPPED_NOTE
        elif ended == "halted":
            note = halted_note(state.halted)
        if interrupted:
            note = "interrupted"
        if not error and not interrupted and state.generated == 0 and state.replays == 0:
            share = f"{job.seconds:.2f} s" if job.seconds is not None else f"{job.max_examples} examples"
            error = (f"got no example in its share ({share}); the run did not test this property "
                     "(raise --duration or --max-examples)")
        if corpus.replayed or corpus.saved:
            note = _join(note, f"reach corpus: {corpus.replayed} played first, {corpus.saved} saved for the next run")
        note = _join(note, slow_note(state.slowest, state.timeout))
        known = sorted(state.replayed)
        if known:
            note = _join(note, f"{len(known)} known failure(s) replayed from the example database")
        run = PropertyRun(job.property, job.transport, examples=state.generated,
                          seconds=time.monotonic() - self.started, note=note, error=error,
                          shrinks=state.shrinks, replays=state.replays, reach=state.reach.to_json())
        self.sink.probes(state.probes, known)
        self.sink.job_done(run)
        return run


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note and more else note or more


def skipped_job(job: Job, prop: Property, ctx: Context, sink: Sink, reason: str) -> PropertyRun:
    """A property that does not apply here: its probes are reported unsent, with the reason."""
    sink.probes([ProbeOutcome(job.property, ctx.transport, p.name, p.rule, False, p.why_not or reason)
                 for p in prop.coverage(ctx)], [])
    return PropertyRun(job.property, job.transport, skipped=True, note=reason)


def run_job(
    job: Job, prop: Property, endpoint: Endpoint, ctx: Context, sink: Sink, *,
    database: ExampleDatabase | None, timeout: float, stop_on_first: bool = False,
    known: frozenset[str] = frozenset(), stop_on_rules: frozenset[str] = frozenset(),
    guidance: tuple[str, ...] = DEFAULT_GUIDANCE, other: tuple[Endpoint, str] | None = None,
) -> PropertyRun:
    """Run one property over one transport: its phases in order, until one says the job ends.

    `stop_on_first`: coverage, then one Hypothesis run that stops at the first failure.
    `stop_on_rules`: the job ends as soon as a finding of one of these rules (or probing one) is
    filed, with a `halted_note` that tells the caller to run no further job.
    `known`: groups not to stop for (a --known baseline): filed, never shrunk again.
    `other`: --compare-target's endpoint and target text: every case is played there too."""
    reason = prop.applicable(ctx)
    if reason is None and job.max_examples <= 0 and job.seconds is None:
        reason = NO_BUDGET_NOTE
    if reason is not None:
        return skipped_job(job, prop, ctx, sink, reason)
    # The processes started during the job run in its property's coverage context
    # (targets/processes.py): what each property contributed to the server's code coverage.
    with coverage_context(job.property):
        endpoint.prepare(prop.fresh_per_example)
        if other is not None:
            other[0].prepare(prop.fresh_per_example)
        run = JobRun(job, prop, endpoint, ctx, sink, database=database, timeout=timeout, known=known,
                     stop_on_rules=stop_on_rules, guidance=guidance, other=other)
        sink.job_started(job)
        ended, error = "", ""
        try:
            skip_local_constants()
            with shrink_time_limit(job.shrink_seconds):
                for phase in run.phases(stop_on_first):
                    result = phase()
                    ended = ended if result is None else result
                    if ended not in GOES_ON:
                        break
        except (_Abort, _Stopped, _Halted) as exc:  # raised by a case played outside Hypothesis
            ended = _SIGNAL_ENDINGS[type(exc)]
        except KeyboardInterrupt:
            raise Interrupted(run.record(ended, interrupted=True)) from None
        except Exception as exc:  # noqa: BLE001 - a harness bug must not lose the campaign's findings
            error = f"{type(exc).__name__}: {exc}"
        return run.record(ended, error=error)
