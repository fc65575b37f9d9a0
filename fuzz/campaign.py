"""The campaign runner: every property as its own Hypothesis test, over every transport, in budget.

Why one Hypothesis test per (property, transport): Hypothesis shrinks one failure per test
towards the smallest example with the same *origin*, and we give each finding bucket (rule,
method, mutation, transport) its own exception type, so several distinct bugs found by one
property are each shrunk on their own and none hides another.

How the budget holds:
- examples: `--max-examples N` is the campaign's total, split across the jobs;
- time: `--duration S` is split the same way; once a job's share is spent (and nothing is being
  shrunk), the next call leaves Hypothesis at once; a job that found something gets its shrink
  allowance on top, then leaves the same way (the evidence is already on disk);
- shrinking: capped per job (Hypothesis' own shrink deadline, set for the run), and a call
  with choices already seen is answered from a cache instead of being played again.

What the runner owns: the side channel from inside Hypothesis to the findings store (every
failing execution becomes evidence at once, so a finding is on disk the moment it is seen and
gets smaller as Hypothesis shrinks it), the per-example blob (`@reproduce_failure`), warm
process reuse, and clean shutdown on Ctrl-C (KeyboardInterrupt unwinds through every `finally`
that reaps a process).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import os
import queue
import signal
import sys
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings

from mcp_tempest.fuzz.findings import Evidence, Finding, FindingStore, PropertyRun, finding_id
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
)
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Property, all_properties
from mcp_tempest.fuzz.properties.endpoints import open_endpoint
from mcp_tempest.fuzz.properties.executor import Endpoint, HarnessError, Run, execute
from mcp_tempest.fuzz.properties.judging import (
    bucket_of,
    evidence_for,
    judge_run,
    primary,
    slow_note,
    slowest_in_allowance,
)
from mcp_tempest.fuzz.properties.surface import Surface, learn_surface, sample_value
from mcp_tempest.fuzz.reach import Reach
from mcp_tempest.fuzz.reach_corpus import ReachCorpus, corpus_key
from mcp_tempest.fuzz.tool_policy import ToolPolicy
from mcp_tempest.strategies.value_sources import ValueSources, command_line_values
from mcp_tempest.targets.target_spec import TargetSpec, parse_target

if TYPE_CHECKING:
    from mcp_tempest.targets.probe import ProbeResult

DEFAULT_MAX_EXAMPLES = 200
DEFAULT_SHRINK_SECONDS = 30.0
DEFAULT_STEP_TIMEOUT = 5.0
UNBOUNDED_EXAMPLES = 10**9
#: --guidance: "corpus" keeps examples that drew a new kind of answer in the example database and
#: plays them first next run (fuzz/reach_corpus.py); "target" also steers Hypothesis towards them
#: within a run (hypothesis.target on the number of new kinds an example drew).
GUIDANCE_CHOICES = ("corpus", "target")
DEFAULT_GUIDANCE: tuple[str, ...] = ("corpus",)


class UnusableTarget(Exception):
    """The target cannot be fuzzed (does not start, does not answer, wrong era): exit status 2."""


# --- plan ---


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


@dataclass(slots=True)
class Prepared:
    """A target ready to be fuzzed: its era, what it offers, whether fresh processes exist."""

    spec: TargetSpec
    era: str
    surface: Surface
    fresh_processes: bool
    detail: str = ""
    mutations: tuple[str, ...] = ()
    dual: bool = False  # the probe found both eras (see Context.dual)
    # The era probe's reading of the catalogue (every list, every page): the report's catalogue
    # section is measured from it, no request of its own. Not carried to worker processes.
    probed: ProbeResult | None = None
    discover: dict[str, Any] | None = None  # see Context.discover

    def context(self) -> Context:
        return Context(
            transport=self.spec.transport, era=self.era, fresh_processes=self.fresh_processes,
            surface=self.surface, target=self.spec.text, mutations=self.mutations, dual=self.dual,
            discover=self.discover,
        )

    def dump(self) -> dict[str, Any]:
        return {"spec": self.spec.text, "isolate_network": self.spec.isolate_network,
                "coverage_rc": self.spec.coverage_rc, "era": self.era, "surface": asdict(self.surface),
                "fresh_processes": self.fresh_processes, "detail": self.detail, "mutations": list(self.mutations),
                "dual": self.dual, "discover": self.discover}

    @classmethod
    def load(cls, data: dict[str, Any]) -> Prepared:
        from mcp_tempest.fuzz.properties.surface import HandleFlow, MrtrTrigger

        s = dict(data["surface"])
        s["triggers"] = [MrtrTrigger(**t) for t in s.get("triggers", [])]
        s["handles"] = HandleFlow(**s["handles"]) if s.get("handles") else None
        spec = parse_target(data["spec"], allow_remote=True, isolate_network=bool(data.get("isolate_network")))
        if data.get("coverage_rc"):
            spec = dataclasses.replace(spec, coverage_rc=str(data["coverage_rc"]))
        return cls(spec, data["era"], Surface(**s),
                   data["fresh_processes"], data.get("detail", ""), tuple(data.get("mutations", ())),
                   bool(data.get("dual", False)), discover=data.get("discover"))


@dataclass(slots=True)
class CampaignConfig:
    targets: list[TargetSpec]
    properties: list[str]
    seed: int
    max_examples: int | None = DEFAULT_MAX_EXAMPLES
    duration: float | None = None
    database: str | None = None  # a directory, redis://..., or None for no database
    workers: int = 1
    timeout: float = DEFAULT_STEP_TIMEOUT
    shrink_seconds: float = DEFAULT_SHRINK_SECONDS
    stop_on_first: bool = False
    mutations: tuple[str, ...] = ()
    known: frozenset[str] = frozenset()  # group ids of a --known baseline: filed, never stopped for
    # --stop-on-rule: end the whole campaign at the first finding of one of these rules (its rule or
    # its probe's); everything before that point is the same campaign as without it
    stop_on_rules: frozenset[str] = frozenset()
    started: float | None = None  # time.monotonic() when the command started: --duration counts from there
    guidance: tuple[str, ...] = DEFAULT_GUIDANCE  # --guidance: how examples that reach new answers are used
    # kept from --duration for ending the server processes and what follows the last job: a
    # process measured by coverage.py writes its data when it ends, which takes a moment each
    teardown_seconds: float = 0.0


@dataclass(slots=True)
class CampaignResult:
    runs: list[PropertyRun] = field(default_factory=list)
    examples: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    prepared: list[Prepared] = field(default_factory=list)
    probes: list[ProbeOutcome] = field(default_factory=list)  # what the coverage phases did
    replayed: set[str] = field(default_factory=set)  # groups the example database brought back


def job_seed(seed: int, prop: str, transport: str) -> int:
    """Each job's seed depends only on the campaign seed and the job, never on the worker count."""
    return (seed * 1_000_003 + zlib.crc32(f"{prop}|{transport}".encode())) % (2**32)


def plan_jobs(
    props: list[Property], prepared: list[Prepared], *, max_examples: int | None, duration: float | None,
    workers: int, shrink_seconds: float, seed: int,
) -> list[Job]:
    """Split the budget: every job first gets its coverage probes, the rest goes by weight.

    With --duration each job's share of the time covers its shrinking too, so the campaign ends
    when asked; with one worker the shares are recomputed as jobs end (see run_jobs_here)."""
    pairs = [(p, t) for t in prepared for p in props]
    usable = [p.applicable(t.context()) is None for p, t in pairs]
    # A property that cannot run on a target gets no share: the others get its examples and time.
    weights = [p.weight if ok else 0.0 for (p, _), ok in zip(pairs, usable, strict=True)]
    total_weight = sum(weights) or 1.0
    budget = max_examples if max_examples is not None else DEFAULT_MAX_EXAMPLES
    probes = [math.ceil(sum(1 for probe in p.coverage(t.context()) if probe.case is not None)
                        / max(p.coverage_batch, 1))
              if ok else 0 for (p, t), ok in zip(pairs, usable, strict=True)]
    counts: list[int] = []
    left = budget
    for n in probes:  # coverage first, in job order, as far as the budget goes
        counts.append(min(n, left))
        left -= counts[-1]
    random_share = [int(left * w / total_weight) for w in weights]
    open_jobs = [i for i, ok in enumerate(usable) if ok] or list(range(len(pairs)))
    for i in range(max(left - sum(random_share), 0)):
        random_share[open_jobs[i % len(open_jobs)]] += 1
    jobs: list[Job] = []
    for (p, t), count, extra, w in zip(pairs, counts, random_share, weights, strict=True):
        share = w / total_weight
        if duration is not None:
            n = UNBOUNDED_EXAMPLES
            seconds: float | None = duration * max(workers, 1) * share
            shrink = min(shrink_seconds, seconds * 0.3)
        else:
            n = max(count + extra, 1)
            seconds = None
            shrink = shrink_seconds
        jobs.append(Job(p.name, t.spec.transport, t.spec.text, n, seconds, shrink,
                        job_seed(seed, p.name, t.spec.transport)))
    return jobs


# --- preparing targets ---


def prepare_target(spec: TargetSpec, *, timeout: float, tools: ToolPolicy | None = None,
                   tool_args: dict[str, dict[str, list[Any]]] | None = None,
                   literals: tuple[dict[str, list[Any]], list[Any]] | None = None) -> Prepared:
    """Probe the era, then learn the surface (with only the tools `tools` allows, their arguments
    informed by the target's command line and the user's `tool_args`); raises UnusableTarget
    with one line."""
    from mcp_tempest.targets.probe import CATALOGUE_LISTS, ProbeFailure, probe

    try:
        result = probe(spec, timeout=max(timeout, 5.0), lists=CATALOGUE_LISTS)
    except ProbeFailure as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    if result.era == "legacy":
        raise UnusableTarget(
            f"{spec.text}: the server speaks only the legacy era ({(result.legacy or {}).get('protocolVersion')}, "
            "initialize handshake); mcp-tempest fuzz judges 2026-07-28 servers and will not judge a "
            "legacy server by modern rules. `mcp-tempest probe` shows what it offers."
        )
    endpoint = open_endpoint(spec, timeout=max(timeout, 5.0))
    try:
        transcript = endpoint.new_transcript()
        conn = endpoint.fresh(transcript)
        try:
            version = result.version or (result.versions[0] if result.versions else None)
            sources = ValueSources(command_line=command_line_entries(command_line_values(spec.argv or (), os.getcwd())),
                                   user=dict(tool_args or {}), literals=list((literals or ({}, []))[1]),
                                   literal_names=dict((literals or ({}, []))[0]))
            surface = learn_surface(conn, version=version or "2026-07-28", timeout=max(timeout, 5.0),
                                    may_call=tools.allows if tools is not None and not tools.unrestricted else None,
                                    sources=sources)
        finally:
            conn.close()
    except HarnessError as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    finally:
        endpoint.close()
    detail = f"{result.era} era ({result.detection})" if result.detection else f"{result.era} era"
    return Prepared(spec, "modern", surface, endpoint.fresh_processes, detail, dual=result.era == "dual",
                    probed=result, discover=_discover_result(result))


#: Entries of a folder the target was started with that are offered as values (a repository's files).
FOLDER_ENTRIES = 20


def command_line_entries(values: list[str]) -> list[str]:
    """The command line's values plus, for each that is a folder here, its first entries by name
    (relative and absolute): a server started on a folder is asked about what is in it."""
    out = list(values)
    for value in values:
        folder = Path(value)
        if not folder.is_absolute() or not folder.is_dir():
            continue
        with contextlib.suppress(OSError):
            names = sorted(e.name for e in os.scandir(folder) if not e.name.startswith("."))[:FOLDER_ENTRIES]
            out += [n for n in names if n not in out] + [str(folder / n) for n in names]
    return out


def _discover_result(result: ProbeResult) -> dict[str, Any] | None:
    """The probe's DiscoverResult as the oracle reads one (None when discover was not answered)."""
    if not result.versions or result.capabilities is None:
        return None
    return {"resultType": "complete", "supportedVersions": list(result.versions),
            "capabilities": dict(result.capabilities)}


# --- where results go ---


class Sink(Protocol):
    def record(self, ev: Evidence) -> bool: ...
    def examples(self, n: int) -> None: ...
    def job_started(self, job: Job) -> None: ...
    def job_done(self, run: PropertyRun) -> None: ...
    def probes(self, outcomes: list[ProbeOutcome], replayed: list[str]) -> None: ...


class StoreSink:
    """In-process: straight into the findings store, and onto the progress display."""

    def __init__(self, store: FindingStore, progress: Progress | None, result: CampaignResult | None = None) -> None:
        self.store = store
        self.progress = progress
        self.result = result

    def probes(self, outcomes: list[ProbeOutcome], replayed: list[str]) -> None:
        if self.result is not None:
            self.result.probes.extend(outcomes)
            self.result.replayed.update(replayed)

    def record(self, ev: Evidence) -> bool:
        finding, is_new = self.store.record(ev)
        if self.progress is not None and is_new:
            self.progress.finding(finding)
        return is_new

    def examples(self, n: int) -> None:
        self.store.add_examples(n)
        if self.progress is not None:
            self.progress.examples(n)

    def job_started(self, job: Job) -> None:
        if self.progress is not None:
            self.progress.job_started(job)

    def job_done(self, run: PropertyRun) -> None:
        if self.progress is not None:
            self.progress.job_done(run)


# --- one job: one property over one transport ---


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


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a job; carries what the job did up to then, so the summary can say it."""

    def __init__(self, record: PropertyRun) -> None:
        super().__init__()
        self.record = record


class _Budget(BaseException):  # noqa: N818 - a control-flow signal
    """The job's time is up: leaves Hypothesis at once, keeping what was found."""


STOPPED_NOTE = "stopped: the target stopped answering (reported once)"


class _Stopped(BaseException):  # noqa: N818 - a control-flow signal
    """The target stopped answering (Run.stopped_answering): reported once, the property ends."""


def halted_note(rule: str) -> str:
    return f"{HALTED_PREFIX}{rule} was found (--stop-on-rule); the properties after this one did not run"


HALTED_PREFIX = "halted: "


class _Halted(BaseException):  # noqa: N818 - a control-flow signal
    """A finding of a --stop-on-rule rule was filed: this job ends, and the campaign after it."""


class _Abort(BaseException):  # noqa: N818 - a control-flow signal, not an error to report
    """Leaves Hypothesis at once (the harness cannot go on); never a finding."""


def open_database(spec: str | None) -> ExampleDatabase | None:
    """A directory path, `redis://host:port/db` (Hypothesis' RedisExampleDatabase), or None."""
    if not spec:
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            from mcp_tempest.fuzz.redis_database import ResilientRedisDatabase

            db = ResilientRedisDatabase(spec)
        except ImportError:
            raise UnusableTarget("--database redis://... needs the `redis` package "
                                 "(pip install \"mcp-tempest[redis]\")") from None
        try:
            db.ping()
        except Exception as exc:  # noqa: BLE001 - any connection problem is one line for the user
            raise UnusableTarget(f"cannot reach the example database {spec}: {exc}") from None
        return db
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(spec)


#: The example-database key prefix under which coverage-phase failures are remembered across runs.
COVERAGE_KEY_PREFIX = b"mcp-tempest/coverage-failures:"
#: How many of the latest generated examples `_JobState.reuse_warm` weighs.
RECENT_EXAMPLES = 20


@dataclass(slots=True)
class _JobState:
    """What one job has spent and found so far, across its rounds."""

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
    cache: dict[bytes, tuple[type[_Failure], str, str]] = field(default_factory=dict)
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

    def time_left(self, now: float) -> bool:
        return now < self.hard_deadline

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


class _WriteOnlyDatabase(ExampleDatabase):
    """The example database as the explore rounds see it: new failures are saved for the next
    run, nothing is replayed (the replay round did that, once, and reported them as known)."""

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


def group_of(ev: Evidence) -> str:
    """The id a finding's group goes by in --known baselines and in "known" reports: the id
    fuzz/findings.py gives the finding this evidence joins (one root cause, one id)."""
    return finding_id(*ev.group_key())


def _engine_phase(state: _JobState) -> str:
    return running_phase(state.engine)


def _end_generation(state: _JobState) -> None:
    """Make Hypothesis leave its generate phase for the shrink phase; then this example is rejected."""
    end_generation(state.engine)
    hypothesis.reject()


def run_job(
    job: Job, prop: Property, endpoint: Endpoint, ctx: Context, sink: Sink, *,
    database: ExampleDatabase | None, timeout: float, stop_on_first: bool = False,
    known: frozenset[str] = frozenset(), stop_on_rules: frozenset[str] = frozenset(),
    guidance: tuple[str, ...] = DEFAULT_GUIDANCE,
) -> PropertyRun:
    """Run one property over one transport: coverage probes, the reach corpus, database replays,
    then exploring.

    1. coverage: the property's named probes, each once, in a fixed order (they count as examples);
    2. replay: failures in the example database are played again and reported as known;
    3. reach corpus: examples earlier runs saved because they drew a new kind of answer (not with
       `stop_on_first`, which is about the first failure alone);
    4. explore: Hypothesis generates at random; a failure whose group is already known (from the
       baseline, the replay, the coverage phase or an earlier round) is filed but does not stop
       it; a new one is shrunk, and then a new round explores on with that group known too,
       until the examples or the time are spent.
    `stop_on_first`: one Hypothesis run that stops at the first failure and shrinks it.
    `stop_on_rules`: the job ends as soon as a finding of one of these rules (or probing one) is
    filed, with a `halted_note` that tells the caller to run no further job.
    """
    started = time.monotonic()
    reason = prop.applicable(ctx)
    if reason is not None:
        sink.probes([ProbeOutcome(job.property, ctx.transport, p.name, p.rule, False, p.why_not or reason)
                     for p in prop.coverage(ctx)], [])
        return PropertyRun(job.property, job.transport, skipped=True, note=reason)
    endpoint.prepare(prop.fresh_per_example)
    share = job.seconds if job.seconds is not None else math.inf
    state = _JobState(cap=job.max_examples, hard_deadline=started + share,
                      shrink_reserve=min(job.shrink_seconds, share * 0.3) if job.seconds is not None else 0.0,
                      shrink_budget=job.shrink_seconds, known=set(known), timeout=timeout)
    transport = ctx.transport
    version = hypothesis.__version__
    listed = frozenset(str(t.get("name")) for t in ctx.surface.tools) | frozenset(ctx.surface.withheld_tools)
    corpus = ReachCorpus(database if "corpus" in guidance else None,
                         corpus_key(job.property, job.transport, job.target))
    sources = ctx.surface.sources

    def attribute(tool: str, arguments: dict[str, Any]) -> str:
        schema = (ctx.surface.tool(tool) or {}).get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        return sources.attribute(tool, arguments, props if isinstance(props, dict) else None, plain=sample_value)

    def play(case: Any, *, reuse_now: bool) -> tuple[Run, list[Violation]]:
        run = execute(case, endpoint, reuse=reuse_now, timeout=timeout)
        state.reach.add_run(run, listed, attribute)
        state.new_kinds += corpus.observe(run)
        slow = slowest_in_allowance(run)
        if slow is not None:
            state.slowest = max(slow, state.slowest) if state.slowest else slow
        return run, judge_run(prop, run, ctx)

    def judge(case: Any, *, phase: str, blob: str | None, record: bool = True,
              ) -> tuple[type[_Failure], str, str] | None:
        """Play one case and file what it broke (unless `record` is False: a coverage batch is
        filed probe by probe); returns the failure when Hypothesis should see it."""
        aside = phase in ("reuse", "shrink", "split")
        t0 = time.monotonic()
        try:
            run, violations = play(case, reuse_now=state.reuse_warm(prop.fresh_per_example, aside=aside))
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
            endpoint.discard_warm()  # it took part in a failure: the next example starts on a clean one
            confirmed = True
            if run.reused:
                # Seen on a process that served earlier examples: play it again on fresh ones. Only a
                # failure that survives this counts for Hypothesis (so what it shrinks is reproducible
                # from the case alone); one that does not is still filed, with a note saying so.
                t1 = time.monotonic()
                run2, violations2 = play(case, reuse_now=False)
                state.shrinks += 1
                if not aside:
                    state.aside_seconds += time.monotonic() - t1
                # The same bug seen again confirms it, whichever violation ranks first this time and
                # whichever method it is located at (a notification's is only the nearest request's).
                same = (bucket[0], bucket[2], bucket[3])
                again = [v for v in violations2 if (lambda b: (b[0], b[2], b[3]))(bucket_of(run2, v, transport)) == same]
                if again:
                    run, violations, main = run2, violations2, again[0]
                else:
                    confirmed = False
        except HarnessError as exc:
            state.harness_error = str(exc)
            raise _Abort() from None
        finally:
            if aside:
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
                                hypothesis_version=version if blob else None, note=note, confirmed=confirmed)
        group = group_of(evidence)
        # A target that stopped answering is filed at once, even from a coverage batch: nothing
        # after this example gets a chance to file it (the property stops here).
        if record or run.stopped_answering is not None:
            sink.record(evidence)
            # only a confirmed finding ends the campaign: an unconfirmed one is an observation
            hit = stop_on_rules & {evidence.rule, evidence.probe_rule or evidence.rule} if confirmed else set()
            if hit:
                state.halted = min(hit)
                raise _Halted()
        if run.stopped_answering is not None:
            state.stopped = run.stopped_answering
            raise _Stopped()  # filed once above; more examples would only time out again
        if not confirmed:
            return None
        return _failure_type(bucket), f"{main.strength} {main.rule}: {main.title}", group

    # 1. coverage
    known_before = set(state.known)
    try:
        _coverage_phase(job, prop, ctx, state, judge, first_only=stop_on_first, database=database)
    except _Abort:
        return _job_record(job, state, started, sink, error=state.harness_error)
    except _Stopped:  # filed once; every further example would only time out again
        return _job_record(job, state, started, sink, note=STOPPED_NOTE)
    except _Halted:
        return _job_record(job, state, started, sink, note=halted_note(state.halted))
    except KeyboardInterrupt:
        raise Interrupted(_job_record(job, state, started, None, note="interrupted")) from None

    def body(case: Any) -> None:
        failure = outcome(case)
        if failure is not None:
            # One raise site for fresh and cached failures: Hypothesis tells bugs apart by the
            # exception's type *and* the line it was raised on.
            exc_type, message, _group = failure
            raise exc_type(message)

    def outcome(case: Any) -> tuple[type[_Failure], str, str] | None:
        build = current_build_context()
        key = choices_to_bytes(build.data.choices)
        phase = _engine_phase(state)
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
                    _end_generation(state)
            elif not state.may_aside(now):
                raise _Budget()
        blob = encode_failure(build.data.choices).decode("ascii")
        state.new_kinds = 0
        failure = judge(case, phase=phase, blob=blob)
        if phase in ("generate", "target") and state.new_kinds:
            corpus.save(choices_to_bytes(build.data.choices))
            if "target" in guidance:
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

    # The example database is keyed by property, transport and target (Hypothesis hashes the
    # function and this digest), so workers and later campaigns on the same target share it.
    set_database_key(body, f"{job.property}|{job.transport}|{job.target}".encode())
    sink.job_started(job)
    note = ""
    error = ""
    interrupted = False

    def one_round(phases: tuple[Phase, ...], db: ExampleDatabase | None, max_examples: int, seed: int,
                  *, multiple: bool = True) -> str:
        """One Hypothesis run; returns how it ended: "", "budget", "abort" or "error: ..."."""
        state.engine.clear()
        state.round_failures = 0
        state.new_groups = set()
        test_settings = settings(  # no @seed: it would switch the example database off; the seed is set below
            max_examples=max(max_examples, 1), database=db, deadline=None, derandomize=False,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=multiple, print_blob=False,
            phases=phases, verbosity=Verbosity.quiet,
        )
        seeded = test_settings(given(prop.cases(ctx))(body))
        set_seed(seeded, seed)
        try:
            seeded()
        except _Budget:
            return "budget"
        except _Abort:
            return "abort"
        except _Stopped:
            return "stopped"
        except _Halted:
            return "halted"
        except _Failure:
            return ""
        except hypothesis.errors.Unsatisfiable:
            return ""
        except BaseExceptionGroup as group:
            flat = _flatten(group)
            if any(isinstance(e, KeyboardInterrupt) for e in flat):
                raise KeyboardInterrupt from None
            others = [e for e in flat if not isinstance(e, _Failure)]
            if any(isinstance(e, _Stopped) for e in others):
                return "stopped"
            if any(isinstance(e, _Halted) for e in others):
                return "halted"
            if any(isinstance(e, _Budget) for e in others):
                return "budget"
            if others:
                return f"error: {type(others[0]).__name__}: {others[0]}"
        except BaseException as exc:
            # A replay round on an empty database: Hypothesis "skips" a test it was told to run
            # no example of (unittest's SkipTest, or pytest's Skipped inside pytest).
            if type(exc).__name__ in ("SkipTest", "Skipped"):
                return ""
            raise
        return ""

    try:
        with shrink_time_limit(job.shrink_seconds):
            if stop_on_first and state.known - known_before:
                ended = ""  # the coverage phase found this property's first failure: stop there
            elif stop_on_first:
                ended = one_round((Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), database,
                                  state.cap - state.generated, job.seed, multiple=False)
            else:
                ended = ""
                if database is not None:
                    ended = one_round((Phase.reuse,), database, 1, job.seed)
                if ended in ("", "budget"):  # 3. the reach corpus: where earlier runs got to
                    try:
                        _corpus_phase(prop, ctx, state, corpus, judge)
                    except _Abort:
                        ended = "abort"
                    except _Stopped:
                        ended = "stopped"
                    except _Halted:
                        ended = "halted"
                round_no = 0
                while ended in ("", "budget") and state.may_generate(time.monotonic()):
                    phases = (Phase.generate, Phase.shrink) if state.may_aside(time.monotonic()) else (Phase.generate,)
                    if "target" in guidance:
                        phases = (Phase.generate, Phase.target, *phases[1:])
                    before = state.generated
                    ended = one_round(phases, _WriteOnlyDatabase(database) if database is not None else None,
                                      state.cap - state.generated, (job.seed + round_no) % (2**32))
                    round_no += 1
                    if not state.new_groups or state.generated == before:
                        break  # nothing new: Hypothesis spent the examples, the time or its search space
                    state.known |= state.new_groups  # explore on, past what this round found
        if ended == "budget" and job.seconds is not None:
            note = "stopped at its time share"
        elif ended == "abort":
            error = state.harness_error or "the harness could not continue"
        elif ended.startswith("error: "):
            error = ended.removeprefix("error: ")
        if ended == "stopped":
            note = STOPPED_NOTE
        if ended == "halted":
            note = halted_note(state.halted)
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # noqa: BLE001 - a harness bug must not lose the campaign's findings
        error = f"{type(exc).__name__}: {exc}"
    if interrupted:
        note = "interrupted"
    if not error and not interrupted and state.generated == 0 and state.replays == 0:
        share_text = f"{job.seconds:.2f} s" if job.seconds is not None else f"{job.max_examples} examples"
        error = (f"got no example in its share ({share_text}); the run did not test this property "
                 "(raise --duration or --max-examples)")
    if corpus.replayed or corpus.saved:
        note = (note + "; " if note else "") + (f"reach corpus: {corpus.replayed} played first, "
                                                 f"{corpus.saved} saved for the next run")
    record = _job_record(job, state, started, sink, note=note, error=error)
    if interrupted:
        raise Interrupted(record)
    return record


def _corpus_phase(prop: Property, ctx: Context, state: _JobState, corpus: ReachCorpus,
                  judge: Callable[..., tuple[type[_Failure], str, str] | None]) -> None:
    """Play what earlier runs sharing the example database saved because it drew a new kind of
    answer (each counts as an example); an entry the strategy no longer draws is dropped. A
    failure here is filed and known to the rounds that follow, as a coverage probe's is."""
    entries = corpus.entries()
    if not entries:
        return
    strategy = prop.cases(ctx)
    for blob in entries:
        if not state.may_generate(time.monotonic()):
            return
        drawn = draw_from_choices(strategy, blob)
        if drawn is None:
            corpus.drop(blob)
            continue
        case, choices = drawn
        failure = judge(case, phase="corpus", blob=encode_failure(choices).decode("ascii"))
        corpus.replayed += 1
        if failure is not None:
            state.known.add(failure[2])


def _coverage_phase(job: Job, prop: Property, ctx: Context, state: _JobState,
                    judge: Callable[..., tuple[type[_Failure], str, str] | None], *, first_only: bool = False,
                    database: ExampleDatabase | None = None) -> None:
    """Send each of the property's named probes once, in order, batched as the property allows;
    a batch that fails is played again probe by probe (counted with shrinking), so each probe
    gets its own verdict. What fails here is known to the rounds that follow. `first_only`
    (--stop-on-first): the phase ends at its first failure, as the property does.

    A probe is no Hypothesis example, so its failure cannot be saved as one; the groups it filed
    are kept in the example database under a key of their own instead, and when the same probe
    fails the same way in a later run sharing the database, that group is reported as a known
    failure the database brought back, as a replayed example's would be."""
    key = COVERAGE_KEY_PREFIX + zlib.crc32(f"{job.property}|{job.transport}|{job.target}".encode()).to_bytes(4, "big")
    earlier: set[str] = set()
    if database is not None:
        with contextlib.suppress(Exception):
            earlier = {v.decode("utf-8", "replace") for v in database.fetch(key)}

    def remember(group: str) -> None:
        if group in earlier:
            state.replayed.add(group)
        elif database is not None:
            with contextlib.suppress(Exception):
                database.save(key, group.encode())

    probes = prop.coverage(ctx)
    transport = ctx.transport
    ready = [p for p in probes if p.case is not None]
    for p in probes:
        if p.case is None:
            state.probes.append(ProbeOutcome(job.property, transport, p.name, p.rule, False, p.why_not))
    size = max(prop.coverage_batch, 1)
    for start in range(0, len(ready), size):
        batch = ready[start:start + size]
        if not state.may_generate(time.monotonic()):
            why = ("the time share ran out first" if state.generated < state.cap
                   else "the example budget ran out first (raise --max-examples)")
            state.probes.extend(ProbeOutcome(job.property, transport, p.name, p.rule, False, why) for p in batch)
            continue
        case = batch[0].case if len(batch) == 1 else prop.combine(batch)
        failure = judge(case, phase="coverage", blob=None, record=len(batch) == 1)
        state.probes.extend(ProbeOutcome(job.property, transport, p.name, p.rule, True) for p in batch)
        if failure is not None and len(batch) > 1:
            for p in batch:
                if state.may_aside(time.monotonic()):
                    single = judge(p.case, phase="split", blob=None)
                    if single is not None:
                        state.known.add(single[2])
                        remember(single[2])
                        if first_only:
                            break
        elif failure is not None:
            state.known.add(failure[2])
            remember(failure[2])
        if first_only and failure is not None:
            why = "not sent: the property stopped at its first failure (--stop-on-first)"
            state.probes.extend(ProbeOutcome(job.property, transport, p.name, p.rule, False, why)
                                for p in ready[start + size:])
            return


def _job_record(job: Job, state: _JobState, started: float, sink: Sink | None, *, note: str = "",
                error: str = "") -> PropertyRun:
    slow = slow_note(state.slowest, state.timeout)
    if slow:
        note = (note + "; " if note else "") + slow
    known = sorted(state.replayed)
    if known:
        note = (note + "; " if note else "") + f"{len(known)} known failure(s) replayed from the example database"
    record = PropertyRun(job.property, job.transport, examples=state.generated,
                         seconds=time.monotonic() - started, note=note, error=error,
                         shrinks=state.shrinks, replays=state.replays, reach=state.reach.to_json())
    record_probes = getattr(sink, "probes", None)
    if record_probes is not None:
        record_probes(state.probes, known)
    if sink is not None:
        sink.job_done(record)
    return record


def _flatten(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_flatten(exc))
        else:
            out.append(exc)
    return out


# --- the whole campaign ---


def run_jobs_here(
    jobs: list[Job], prepared: list[Prepared], props: dict[str, Property], sink: Sink, *,
    database: ExampleDatabase | None, timeout: float, should_stop: Callable[[], bool] = lambda: False,
    runs: list[PropertyRun] | None = None, stop_on_first: bool = False, known: frozenset[str] = frozenset(),
    deadline: float | None = None, stop_on_rules: frozenset[str] = frozenset(),
    guidance: tuple[str, ...] = DEFAULT_GUIDANCE,
) -> list[PropertyRun]:
    """Run jobs in this process, one endpoint per target for all of them (warm processes and
    pools carry over from one property to the next).

    `deadline` (with --duration): each job's share is recomputed when it starts, from the time
    left and the weights of the jobs left, so what one job did not use goes to the next ones and
    an overrun is taken from them rather than added to the end."""
    by_target = {p.spec.text: p for p in prepared}
    endpoints: dict[str, Endpoint] = {}
    runs = runs if runs is not None else []
    weights = [props[j.property].weight if props[j.property].applicable(by_target[j.target].context()) is None
               else 0.0 for j in jobs]
    try:
        for k, job in enumerate(jobs):
            if should_stop():
                break
            if deadline is not None:
                left = max(deadline - time.monotonic(), 0.0)
                job.seconds = left * weights[k] / (sum(weights[k:]) or 1.0)
                job.shrink_seconds = min(job.shrink_seconds, job.seconds * 0.3)
            prep = by_target[job.target]
            endpoint = endpoints.get(job.target)
            if endpoint is None:
                endpoint = endpoints[job.target] = open_endpoint(prep.spec, timeout=max(timeout, 5.0))
            try:
                runs.append(run_job(job, props[job.property], endpoint, prep.context(), sink,
                                    database=database, timeout=timeout, stop_on_first=stop_on_first, known=known,
                                    stop_on_rules=stop_on_rules, guidance=guidance))
            except Interrupted as exc:
                runs.append(exc.record)
                raise
            if runs[-1].note.startswith(HALTED_PREFIX):
                break
    finally:
        for endpoint in endpoints.values():
            with contextlib.suppress(Exception):
                endpoint.close()
    return runs


def run_campaign(
    config: CampaignConfig, store: FindingStore, *, progress: Progress | None = None,
    prepared: list[Prepared] | None = None,
) -> CampaignResult:
    """Prepare every target, plan, run; KeyboardInterrupt stops it with what was found so far."""
    started = time.monotonic()
    result = CampaignResult()
    props_all = all_properties()
    props = [props_all[name] for name in config.properties]
    if prepared is None:
        prepared = [prepare_target(spec, timeout=config.timeout) for spec in config.targets]
    result.prepared = prepared
    for prep in prepared:
        prep.mutations = tuple(config.mutations)
        result.notes.extend(f"{prep.spec.text}: {n}" for n in prep.surface.notes)
        if not prep.fresh_processes:
            result.notes.append(
                f"{prep.spec.text}: a running endpoint cannot be restarted; properties that need a fresh "
                "process use a fresh connection instead"
            )
    origin = config.started if config.started is not None else started
    duration = config.duration
    deadline = None
    if duration is not None:
        # The reports are written after the last job: keep a little time for them.
        deadline = origin + duration - min(0.5 + config.teardown_seconds, duration * (0.02 + 0.18 * bool(
            config.teardown_seconds)))
        duration = max(deadline - time.monotonic(), 0.1)
    jobs = plan_jobs(props, prepared, max_examples=config.max_examples, duration=duration,
                     workers=config.workers, shrink_seconds=config.shrink_seconds, seed=config.seed)
    if progress is not None:
        progress.plan(jobs, duration=duration)
    database = open_database(config.database)
    sink = StoreSink(store, progress, result)
    runs: list[PropertyRun] = []
    try:
        if config.workers <= 1:
            run_jobs_here(jobs, prepared, props_all, sink, database=database, timeout=config.timeout, runs=runs,
                          stop_on_first=config.stop_on_first, known=config.known,
                          deadline=deadline, stop_on_rules=config.stop_on_rules, guidance=config.guidance)
        else:
            _run_workers(config, jobs, prepared, store, progress, runs, result)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        result.runs = runs
        result.examples = store.examples
        result.seconds = time.monotonic() - started
        store.interrupted = result.interrupted
        store.write_index()
    done = {(r.property, r.transport): r for r in result.runs}
    result.runs = [
        done.get((job.property, job.transport)) or PropertyRun(
            job.property, job.transport, skipped=True,
            note="not run: campaign interrupted" if result.interrupted else "not run")
        for job in jobs
    ]
    return result


# --- worker processes ---


def _run_workers(
    config: CampaignConfig, jobs: list[Job], prepared: list[Prepared], store: FindingStore,
    progress: Progress | None, runs: list[PropertyRun], result: CampaignResult | None = None,
) -> list[PropertyRun]:
    """K processes pull jobs from one queue and share the example database; findings come back
    to this process, which alone writes files. Ctrl-C here is forwarded to every worker."""
    ctx = multiprocessing.get_context("spawn")
    job_q: Any = ctx.Queue()
    out_q: Any = ctx.Queue()
    for job in jobs:
        job_q.put(asdict(job))
    workers = max(1, min(config.workers, len(jobs)))
    for _ in range(workers):
        job_q.put(None)
    payload = {
        "prepared": [p.dump() for p in prepared], "database": config.database, "timeout": config.timeout,
        "stop_on_first": config.stop_on_first, "known": sorted(config.known), "guidance": list(config.guidance),
    }
    procs = [ctx.Process(target=worker_main, args=(payload, job_q, out_q, i), name=f"mcp-tempest-worker-{i}")
             for i in range(workers)]
    for p in procs:
        p.start()
    sink = StoreSink(store, progress, result)
    try:
        while True:
            try:
                kind, data = out_q.get(timeout=0.2)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break
                continue
            _dispatch(kind, data, sink, runs, store)
        _drain(out_q, sink, runs, store)
    except KeyboardInterrupt:
        for p in procs:
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGINT)
        deadline = time.monotonic() + 20.0
        while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty, KeyboardInterrupt):
                kind, data = out_q.get(timeout=0.2)
                _dispatch(kind, data, sink, runs, store)
        _drain(out_q, sink, runs, store)
        raise
    finally:
        for p in procs:
            p.join(timeout=5.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)
            if p.is_alive():
                p.kill()
                p.join(timeout=5.0)
    return runs


def _drain(out_q: Any, sink: Sink, runs: list[PropertyRun], store: FindingStore) -> None:
    for _ in range(100_000):
        try:
            kind, data = out_q.get(timeout=0.05)
        except (queue.Empty, OSError, EOFError):
            return
        _dispatch(kind, data, sink, runs, store)


def _dispatch(kind: str, data: Any, sink: Sink, runs: list[PropertyRun], store: FindingStore) -> None:
    if kind == "evidence":
        sink.record(Evidence(**data))
    elif kind == "examples":
        sink.examples(int(data))
    elif kind == "started":
        sink.job_started(Job(**data))
    elif kind == "done":
        run = PropertyRun.from_json(data)
        runs.append(run)
        sink.job_done(run)
    elif kind == "probes":
        sink.probes([ProbeOutcome(**o) for o in data["outcomes"]], list(data["replayed"]))


class _QueueSink:
    def __init__(self, out_q: Any) -> None:
        self.out_q = out_q

    def record(self, ev: Evidence) -> bool:
        self.out_q.put(("evidence", asdict(ev)))
        return True

    def examples(self, n: int) -> None:
        self.out_q.put(("examples", n))

    def job_started(self, job: Job) -> None:
        self.out_q.put(("started", asdict(job)))

    def job_done(self, run: PropertyRun) -> None:
        self.out_q.put(("done", run.to_json()))

    def probes(self, outcomes: list[ProbeOutcome], replayed: list[str]) -> None:
        self.out_q.put(("probes", {"outcomes": [asdict(o) for o in outcomes], "replayed": replayed}))


def worker_main(payload: dict[str, Any], job_q: Any, out_q: Any, index: int) -> None:
    """A worker process: take jobs until the queue says stop; SIGINT/SIGTERM end it cleanly."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    prepared = [Prepared.load(p) for p in payload["prepared"]]
    props = all_properties()
    sink = _QueueSink(out_q)
    database = open_database(payload["database"])
    by_target = {p.spec.text: p for p in prepared}
    endpoints: dict[str, Endpoint] = {}
    try:
        while True:
            item = job_q.get()
            if item is None:
                return
            job = Job(**item)
            prep = by_target[job.target]
            endpoint = endpoints.get(job.target)
            if endpoint is None:
                endpoint = endpoints[job.target] = open_endpoint(prep.spec, timeout=max(payload["timeout"], 5.0))
            run_job(job, props[job.property], endpoint, prep.context(), sink, database=database,
                    timeout=payload["timeout"], stop_on_first=payload["stop_on_first"],
                    known=frozenset(payload["known"]), guidance=tuple(payload.get("guidance", DEFAULT_GUIDANCE)))
    except KeyboardInterrupt:  # Interrupted included: its record already went to the parent
        return
    finally:
        for endpoint in endpoints.values():
            with contextlib.suppress(BaseException):
                endpoint.close()
        with contextlib.suppress(BaseException):
            out_q.close()
            out_q.join_thread()


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# --- progress on stderr ---


class Progress:
    """A live bar when stderr is a terminal; otherwise one compact line per job and per finding."""

    def __init__(self, mode: str = "auto", stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        is_tty = is_tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"  # no escapes then
        self.live = mode == "bar" or (mode == "auto" and is_tty)
        self.quiet = mode == "never"
        self.total_examples: int | None = None
        self.duration: float | None = None
        self.done = 0
        self.findings = 0
        self.jobs_total = 0
        self.jobs_done = 0
        self.current = ""
        self.started = time.monotonic()
        self._last_draw = 0.0

    def plan(self, jobs: list[Job], *, duration: float | None) -> None:
        self.jobs_total = len(jobs)
        self.duration = duration
        if duration is None:
            self.total_examples = sum(j.max_examples for j in jobs)

    def job_started(self, job: Job) -> None:
        self.current = job.label
        self._draw(force=True)

    def examples(self, n: int) -> None:
        self.done += n
        self._draw()

    def finding(self, finding: Finding) -> None:
        self.findings += 1
        self._line(f"fuzz: finding {finding.id}: {finding.label} {finding.rule} {finding.title} "
                   f"[{finding.property}/{finding.transport}]")

    def job_done(self, run: PropertyRun) -> None:
        self.jobs_done += 1
        status = run.error or run.note or ("skipped" if run.skipped else "")
        if not self.live:
            self._line(f"fuzz: [{self.jobs_done}/{self.jobs_total}] {run.property}[{run.transport}] "
                       f"{run.examples} examples, {run.seconds:.1f} s" + (f" ({status})" if status else ""))
        self._draw(force=True)

    def close(self) -> None:
        if self.live and not self.quiet:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _line(self, text: str) -> None:
        if self.quiet:
            return
        if self.live:
            self.stream.write("\r\x1b[K")
        self.stream.write(text + "\n")
        self.stream.flush()
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        if not self.live or self.quiet:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        elapsed = now - self.started
        if self.duration:
            frac = min(elapsed / self.duration, 1.0)
            count = f"{self.done} examples"
        else:
            total = self.total_examples or 1
            frac = min(self.done / total, 1.0)
            count = f"{self.done}/{total} examples"
        width = 24
        filled = int(frac * width)
        bar = "#" * filled + "." * (width - filled)
        text = (f"fuzz [{bar}] {count}  {self.findings} finding{'s' if self.findings != 1 else ''}  "
                f"{self.current}  {int(elapsed) // 60}:{int(elapsed) % 60:02d}")
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
