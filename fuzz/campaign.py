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
import multiprocessing
import os
import queue
import signal
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.control import current_build_context
from hypothesis.core import encode_failure
from hypothesis.database import ExampleDatabase, choices_to_bytes

from fuzz.findings import Evidence, Finding, FindingStore, PropertyRun
from fuzz.oracle.model import Violation
from fuzz.properties.base import Context, Property, all_properties
from fuzz.properties.endpoints import open_endpoint
from fuzz.properties.executor import Endpoint, HarnessError, Run, execute
from fuzz.properties.judging import bucket_of, evidence_for, judge_run, primary
from fuzz.properties.surface import Surface, learn_surface
from targets.target_spec import TargetSpec, parse_target

DEFAULT_MAX_EXAMPLES = 200
DEFAULT_SHRINK_SECONDS = 30.0
DEFAULT_STEP_TIMEOUT = 5.0
UNBOUNDED_EXAMPLES = 10**9


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

    def context(self) -> Context:
        return Context(
            transport=self.spec.transport, era=self.era, fresh_processes=self.fresh_processes,
            surface=self.surface, target=self.spec.text, mutations=self.mutations, dual=self.dual,
        )

    def dump(self) -> dict[str, Any]:
        return {"spec": self.spec.text, "era": self.era, "surface": asdict(self.surface),
                "fresh_processes": self.fresh_processes, "detail": self.detail, "mutations": list(self.mutations),
                "dual": self.dual}

    @classmethod
    def load(cls, data: dict[str, Any]) -> Prepared:
        from fuzz.properties.surface import HandleFlow, MrtrTrigger

        s = dict(data["surface"])
        s["triggers"] = [MrtrTrigger(**t) for t in s.get("triggers", [])]
        s["handles"] = HandleFlow(**s["handles"]) if s.get("handles") else None
        return cls(parse_target(data["spec"], allow_remote=True), data["era"], Surface(**s),
                   data["fresh_processes"], data.get("detail", ""), tuple(data.get("mutations", ())),
                   bool(data.get("dual", False)))


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
    first_finding: bool = False
    mutations: tuple[str, ...] = ()


@dataclass(slots=True)
class CampaignResult:
    runs: list[PropertyRun] = field(default_factory=list)
    examples: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    prepared: list[Prepared] = field(default_factory=list)


def job_seed(seed: int, prop: str, transport: str) -> int:
    """Each job's seed depends only on the campaign seed and the job, never on the worker count."""
    return (seed * 1_000_003 + zlib.crc32(f"{prop}|{transport}".encode())) % (2**32)


def plan_jobs(
    props: list[Property], prepared: list[Prepared], *, max_examples: int | None, duration: float | None,
    workers: int, shrink_seconds: float, seed: int,
) -> list[Job]:
    pairs = [(p, t) for t in prepared for p in props]
    total_weight = sum(p.weight for p, _ in pairs) or 1.0
    budget = max_examples if max_examples is not None else DEFAULT_MAX_EXAMPLES
    counts = [int(budget * p.weight / total_weight) for p, _ in pairs]
    for i in range(max(budget - sum(counts), 0)):
        counts[i % len(counts)] += 1
    jobs: list[Job] = []
    for (p, t), count in zip(pairs, counts, strict=True):
        share = p.weight / total_weight
        if duration is not None:
            n = UNBOUNDED_EXAMPLES
            seconds: float | None = max(duration * max(workers, 1) * share, 0.5)
            shrink = min(shrink_seconds, max(seconds * 0.5, 3.0))
        else:
            n = max(count, 1)
            seconds = None
            shrink = shrink_seconds
        jobs.append(Job(p.name, t.spec.transport, t.spec.text, n, seconds, shrink,
                        job_seed(seed, p.name, t.spec.transport)))
    return jobs


# --- preparing targets ---


def prepare_target(spec: TargetSpec, *, timeout: float) -> Prepared:
    """Probe the era, then learn the surface; raises UnusableTarget with one line."""
    from targets.probe import ProbeFailure, probe

    try:
        result = probe(spec, timeout=max(timeout, 5.0))
    except ProbeFailure as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    if result.era == "legacy":
        raise UnusableTarget(
            f"{spec.text}: the server speaks only the legacy era ({(result.legacy or {}).get('protocolVersion')}, "
            "initialize handshake); mcp-gauntlet fuzz judges 2026-07-28 servers and will not judge a "
            "legacy server by modern rules. `mcp-gauntlet probe` shows what it offers."
        )
    endpoint = open_endpoint(spec, timeout=max(timeout, 5.0))
    try:
        transcript = endpoint.new_transcript()
        conn = endpoint.fresh(transcript)
        try:
            version = result.version or (result.versions[0] if result.versions else None)
            surface = learn_surface(conn, version=version or "2026-07-28", timeout=max(timeout, 5.0))
        finally:
            conn.close()
    except HarnessError as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    finally:
        endpoint.close()
    detail = f"{result.era} era ({result.detection})" if result.detection else f"{result.era} era"
    return Prepared(spec, "modern", surface, endpoint.fresh_processes, detail, dual=result.era == "dual")


# --- where results go ---


class Sink(Protocol):
    def record(self, ev: Evidence) -> bool: ...
    def examples(self, n: int) -> None: ...
    def job_started(self, job: Job) -> None: ...
    def job_done(self, run: PropertyRun) -> None: ...


class StoreSink:
    """In-process: straight into the findings store, and onto the progress display."""

    def __init__(self, store: FindingStore, progress: Progress | None) -> None:
        self.store = store
        self.progress = progress

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


class _Stopped(BaseException):  # noqa: N818 - a control-flow signal
    """The target stopped answering (Run.stopped_answering): reported once, the property ends."""


class _Abort(BaseException):  # noqa: N818 - a control-flow signal, not an error to report
    """Leaves Hypothesis at once (the harness cannot go on); never a finding."""


@dataclass(slots=True)
class _JobState:
    gen_deadline: float
    hard_deadline: float
    executions: int = 0
    failures: int = 0
    cache: dict[bytes, tuple[type[_Failure], str]] = field(default_factory=dict)
    passed: set[bytes] = field(default_factory=set)
    harness_error: str = ""
    stopped: str = ""  # why the target stopped answering, once it did


def open_database(spec: str | None) -> ExampleDatabase | None:
    """A directory path, `redis://host:port/db` (Hypothesis' RedisExampleDatabase), or None."""
    if not spec:
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise UnusableTarget("--database redis://... needs the `redis` package (pip install redis)") from None
        client = redis.Redis.from_url(spec)
        try:
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any connection problem is one line for the user
            raise UnusableTarget(f"cannot reach the example database {spec}: {exc}") from None
        return RedisExampleDatabase(client)
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(spec)


def run_job(
    job: Job, prop: Property, endpoint: Endpoint, ctx: Context, sink: Sink, *,
    database: ExampleDatabase | None, timeout: float, first_finding: bool = False,
) -> PropertyRun:
    """Run one property over one transport as one Hypothesis test; returns what it did.

    `first_finding`: stop generating at the first failure and shrink only that one (Hypothesis'
    report_multiple_bugs=False), then move on to the next property; faster, finds less.
    """
    started = time.monotonic()
    reason = prop.applicable(ctx)
    if reason is not None:
        return PropertyRun(job.property, job.transport, skipped=True, note=reason)
    endpoint.prepare(prop.fresh_per_example)
    gen_seconds = job.seconds if job.seconds is not None else float("inf")
    state = _JobState(gen_deadline=started + gen_seconds, hard_deadline=started + gen_seconds + job.shrink_seconds)
    reuse = True  # the case says which of its processes may be warm
    transport = ctx.transport
    version = hypothesis.__version__

    def play(case: Any, *, reuse_now: bool) -> tuple[Run, list[Violation]]:
        run = execute(case, endpoint, reuse=reuse_now, timeout=timeout)
        return run, judge_run(prop, run, ctx)

    test_settings = settings(  # no @seed: it would switch the example database off; the seed is set below
        max_examples=job.max_examples, database=database, deadline=None, derandomize=False,
        suppress_health_check=list(HealthCheck), report_multiple_bugs=not first_finding, print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), verbosity=Verbosity.quiet,
    )

    def body(case: Any) -> None:
        failure = outcome(case)
        if failure is not None:
            # One raise site for fresh and cached failures: Hypothesis tells bugs apart by the
            # exception's type *and* the line it was raised on.
            exc_type, message = failure
            raise exc_type(message)

    def outcome(case: Any) -> tuple[type[_Failure], str] | None:
        build = current_build_context()
        key = choices_to_bytes(build.data.choices)
        cached = state.cache.get(key)
        if cached is not None:
            return cached
        if key in state.passed:
            return None
        now = time.monotonic()
        if not build.is_final and (now > state.hard_deadline or (now > state.gen_deadline and not state.failures)):
            raise _Budget()
        try:
            # Once a property that spawns per example has failed, its examples (the shrink candidates
            # above all) run on fresh processes only: a warm run would need a fresh confirmation
            # whenever it fails, which costs more processes than it saves.
            run, violations = play(case, reuse_now=reuse and not (prop.fresh_per_example and state.failures))
        except HarnessError as exc:
            state.harness_error = str(exc)
            raise _Abort() from None
        state.executions += 1
        sink.examples(1)
        if not violations:
            state.passed.add(key)
            return None
        main = primary(violations, run)
        bucket = bucket_of(run, main, transport)
        blob = encode_failure(build.data.choices).decode("ascii")
        endpoint.discard_warm()  # it took part in a failure: the next example starts on a clean one
        confirmed = True
        if run.reused:
            # Seen on a process that served earlier examples: play it again on fresh ones. Only a
            # failure that survives this counts for Hypothesis (so what it shrinks is reproducible
            # from the case alone); one that does not is still filed, with a note saying so.
            try:
                run2, violations2 = play(case, reuse_now=False)
            except HarnessError as exc:
                state.harness_error = str(exc)
                raise _Abort() from None
            state.executions += 1
            sink.examples(1)
            if violations2 and bucket_of(run2, primary(violations2, run2), transport) == bucket:
                run, violations, main = run2, violations2, primary(violations2, run2)
            else:
                confirmed = False
        note = "" if confirmed else (
            "seen only on a process that had served earlier examples; fresh processes did not show it, "
            "so a replay may pass")
        state.failures += 1
        # Only the primary violation is filed: the others are in the evidence, and when they are
        # bugs of their own, other examples make them primary (often they are consequences of it).
        sink.record(evidence_for(run, violations, main, prop=prop, transport=transport, blob=blob,
                                 hypothesis_version=version, note=note, confirmed=confirmed))
        if run.stopped_answering is not None:
            state.stopped = run.stopped_answering
            raise _Stopped()  # filed once above; more examples would only time out again
        if not confirmed:
            state.passed.add(key)
            return None
        state.cache[key] = (_failure_type(bucket), f"{main.strength} {main.rule}: {main.title}")
        return state.cache[key]

    # The example database is keyed by property, transport and target (Hypothesis hashes the
    # function and this digest), so workers and later campaigns on the same target share it.
    body._hypothesis_internal_add_digest = f"{job.property}|{job.transport}|{job.target}".encode()  # type: ignore[attr-defined]
    seeded = test_settings(given(prop.cases(ctx))(body))
    seeded._hypothesis_internal_use_seed = job.seed  # type: ignore[attr-defined]  # what @seed sets
    sink.job_started(job)
    note = ""
    error = ""
    from hypothesis.internal.conjecture import engine as _engine

    old_shrink = _engine.MAX_SHRINKING_SECONDS
    _engine.MAX_SHRINKING_SECONDS = max(int(job.shrink_seconds), 1)
    interrupted = False
    try:
        seeded()
    except _Budget:
        note = "stopped at its time share"
    except _Stopped:
        note = "stopped: the target stopped answering (reported once)"
    except _Abort:
        error = state.harness_error or "the harness could not continue"
    except _Failure:
        pass
    except KeyboardInterrupt:
        interrupted = True
    except BaseExceptionGroup as group:
        flat = _flatten(group)
        interrupted = any(isinstance(e, KeyboardInterrupt) for e in flat)
        others = [e for e in flat if not isinstance(e, _Failure | KeyboardInterrupt)]
        if others:
            error = f"{type(others[0]).__name__}: {others[0]}"
    except Exception as exc:  # noqa: BLE001 - a harness bug must not lose the campaign's findings
        error = f"{type(exc).__name__}: {exc}"
    finally:
        _engine.MAX_SHRINKING_SECONDS = old_shrink
    if interrupted:
        note = "interrupted"
    run_record = PropertyRun(job.property, job.transport, examples=state.executions,
                             seconds=time.monotonic() - started, note=note, error=error)
    sink.job_done(run_record)
    if interrupted:
        raise Interrupted(run_record)
    return run_record


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
    runs: list[PropertyRun] | None = None, first_finding: bool = False,
) -> list[PropertyRun]:
    """Run jobs in this process, one endpoint per target for all of them (warm processes and
    pools carry over from one property to the next)."""
    by_target = {p.spec.text: p for p in prepared}
    endpoints: dict[str, Endpoint] = {}
    runs = runs if runs is not None else []
    try:
        for job in jobs:
            if should_stop():
                break
            prep = by_target[job.target]
            endpoint = endpoints.get(job.target)
            if endpoint is None:
                endpoint = endpoints[job.target] = open_endpoint(prep.spec, timeout=max(timeout, 5.0))
            try:
                runs.append(run_job(job, props[job.property], endpoint, prep.context(), sink,
                                    database=database, timeout=timeout, first_finding=first_finding))
            except Interrupted as exc:
                runs.append(exc.record)
                raise
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
    duration = config.duration
    if duration is not None:
        duration = max(duration - (time.monotonic() - started), 1.0)
    jobs = plan_jobs(props, prepared, max_examples=config.max_examples, duration=duration,
                     workers=config.workers, shrink_seconds=config.shrink_seconds, seed=config.seed)
    if progress is not None:
        progress.plan(jobs, duration=duration)
    database = open_database(config.database)
    sink = StoreSink(store, progress)
    runs: list[PropertyRun] = []
    try:
        if config.workers <= 1:
            run_jobs_here(jobs, prepared, props_all, sink, database=database, timeout=config.timeout, runs=runs,
                          first_finding=config.first_finding)
        else:
            _run_workers(config, jobs, prepared, store, progress, runs)
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
    progress: Progress | None, runs: list[PropertyRun],
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
        "first_finding": config.first_finding,
    }
    procs = [ctx.Process(target=worker_main, args=(payload, job_q, out_q, i), name=f"mcp-gauntlet-worker-{i}")
             for i in range(workers)]
    for p in procs:
        p.start()
    sink = StoreSink(store, progress)
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
                    timeout=payload["timeout"], first_finding=payload["first_finding"])
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
        self._line(f"fuzz: finding {finding.id}: {finding.strength} {finding.rule} {finding.title} "
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
