"""The campaign: which jobs run (every property over every transport), on which prepared
targets, in which processes, within which budget; one job's own phases are fuzz/job.py's.

Why one Hypothesis test per (property, transport): Hypothesis shrinks one failure per test
towards the smallest example with the same *origin*, and each finding bucket (rule, method,
mutation, transport) gets its own exception type, so several distinct bugs found by one
property are each shrunk on their own and none hides another.

How the budget holds:
- examples: `--max-examples N` is the campaign's total, split across the jobs;
- time: `--duration S` is split the same way, each job's share recomputed when it starts from
  the time left (what one job did not use goes to the next ones);
- shrinking: capped per job (Hypothesis' own shrink deadline, set for the run), and a call
  with choices already seen is answered from a cache instead of being played again.

What this module owns besides: preparing a target (era, surface, value sources), the worker
processes and the queue that brings their evidence back, the findings store as the sink of
every job, and clean shutdown on Ctrl-C (KeyboardInterrupt unwinds through every `finally`
that reaps a process).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from mcp_tempest.fuzz import terminal_style
from mcp_tempest.fuzz.findings import Evidence, Finding, FindingStore, PropertyRun
from mcp_tempest.fuzz.hypothesis_compat import (
    ExampleDatabase,
    prime_unicode_tables,
)
from mcp_tempest.fuzz.job import (
    DEFAULT_GUIDANCE,
    HALTED_PREFIX,
    Interrupted,
    Job,
    ProbeOutcome,
    Sink,
    run_job,
)
from mcp_tempest.fuzz.properties.base import Context, Property, all_properties
from mcp_tempest.fuzz.properties.endpoints import open_endpoint
from mcp_tempest.fuzz.properties.executor import Endpoint, HarnessError
from mcp_tempest.fuzz.properties.surface import Surface, learn_surface
from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.tool_policy import ToolPolicy
from mcp_tempest.strategies.value_sources import ValueSources, command_line_values
from mcp_tempest.targets import stop_request
from mcp_tempest.targets.target_spec import TargetSpec, parse_target

if TYPE_CHECKING:
    from mcp_tempest.fuzz.catalogue import Catalogue
    from mcp_tempest.targets.probe import ProbeResult

DEFAULT_MAX_EXAMPLES = 200
DEFAULT_SHRINK_SECONDS = 30.0
DEFAULT_STEP_TIMEOUT = 5.0
UNBOUNDED_EXAMPLES = 10**9
WORKERS_TEARDOWN = 2.0  # seconds: --workers processes closing their targets and exiting


class UnusableTarget(Exception):
    """The target cannot be fuzzed (does not start, does not answer, wrong era): exit status 2."""


# --- plan ---


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
    # What the era probe's reading of the catalogue (every list, every page) costs, measured in
    # prepare_target (no request of its own), and its definitions as JSON text for findings.json:
    # `catalogue` and `definitions`, read once, when the reports are written. Held packed until
    # then (`pack_catalogue`): for 100,000 tools, 100,000 costs and 9 MB of text that would be held
    # through every example. The parsed lists themselves are let go in prepare_target. Not carried
    # to worker processes.
    packed_catalogue: bytes | None = None
    _catalogue: tuple[Catalogue | None, bytes | None] | None = field(default=None, init=False, repr=False,
                                                                   compare=False)
    discover: dict[str, Any] | None = None  # see Context.discover
    # What the era probe's reading of the catalogue itself broke (a pagination loop), for the
    # campaign to file. Not carried to worker processes either.
    probe_findings: list[Evidence] = field(default_factory=list)

    @property
    def catalogue(self) -> Catalogue | None:
        return self._unpacked()[0]

    @property
    def definitions(self) -> orjson.Fragment | None:
        """The catalogue's definitions as findings.json writes them (as they are: a fragment)."""
        definitions = self._unpacked()[1]
        return None if definitions is None else orjson.Fragment(definitions)

    def _unpacked(self) -> tuple[Catalogue | None, bytes | None]:
        """Unpacked once, when first read (the campaign is over then)."""
        if self._catalogue is None:
            packed = self.packed_catalogue
            self._catalogue = (None, None) if packed is None else pickle.loads(zlib.decompress(packed))
        return self._catalogue

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
    # --compare-target: every case is played on this target too, differences filed (fuzz/differences.py)
    compare_target: TargetSpec | None = None


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
    """Split the budget: one example for every job, then their coverage probes, the rest by weight.

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
    # Every job that can run gets one example first (its first probe batch, or a random case), so
    # one property's many probes never leave another with none; then the rest of the probes, in
    # job order, as far as the budget goes; then the remainder at random, by weight.
    counts = [0] * len(pairs)
    left = budget
    for i, ok in enumerate(usable):
        if ok and left > 0:
            counts[i], left = 1, left - 1
    for i, n in enumerate(probes):
        more = min(max(n - counts[i], 0), left) if counts[i] else 0
        counts[i] += more
        left -= more
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
            n = count + extra  # may be 0: --max-examples is the campaign's total, exactly
            seconds = None
            shrink = shrink_seconds
        jobs.append(Job(p.name, t.spec.transport, t.spec.text, n, seconds, shrink,
                        job_seed(seed, p.name, t.spec.transport)))
    return jobs


# --- preparing targets ---


def prepare_target(spec: TargetSpec, *, timeout: float, tools: ToolPolicy | None = None,
                   tool_args: dict[str, dict[str, list[Any]]] | None = None,
                   literals: tuple[dict[str, list[Any]], list[Any]] | None = None, seed: int = 0) -> Prepared:
    """Probe the era, then learn the surface (with only the tools `tools` allows, their arguments
    informed by the target's command line and the user's `tool_args`; a list longer than
    surface.MAX_SURFACE_ITEMS sampled by `seed`, the campaign's); raises UnusableTarget with one
    line."""
    from mcp_tempest.fuzz.catalogue import Meter, Reading, pagination_evidence
    from mcp_tempest.targets.heap import return_big_blocks
    from mcp_tempest.targets.list_reader import ListBudget
    from mcp_tempest.targets.probe import CATALOGUE_LISTS, ProbeFailure, probe

    return_big_blocks()  # a target's list pages, 9 MB each, are freed again and again from here on
    prime_unicode_tables()  # before anything here draws a string: the table is made out of process
    transcript = spec.new_transcript()
    # The catalogue is measured as the probe reads it, a page at a time, and no page is kept (the
    # transcript keeps their bytes): a list of any length costs one parsed page here (issue 30).
    meter = Meter()
    try:
        result = probe(spec, timeout=max(timeout, 5.0), lists=CATALOGUE_LISTS, transcript=transcript,
                       take=meter.take, budget=ListBudget(options=False))  # fuzz has no list-budget options
    except ProbeFailure as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    # A list whose cursor loops is a finding of the catalogue's own, seen here first (and only
    # here: the surface reads fewer pages). Made now, while the probe's transcript is at hand.
    looped = any(r.loop is not None for reads in result.list_reads for r in reads.values())
    probe_findings = pagination_evidence(Reading(result, None, transcript, "")) if looped else []
    del transcript
    if result.era == "legacy":
        raise UnusableTarget(
            f"{spec.text}: the server speaks only the legacy era ({(result.legacy or {}).get('protocolVersion')}, "
            "initialize handshake); mcp-tempest fuzz judges 2026-07-28 servers and will not judge a "
            "legacy server by modern rules. `mcp-tempest probe` shows what it offers."
        )
    packed = pack_catalogue(meter.catalogue(result), meter.saved_definitions(result.instructions))
    del meter
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
                                    sources=sources, seed=seed)
        finally:
            conn.close()
    except HarnessError as exc:
        raise UnusableTarget(f"{spec.text}: {exc}") from None
    finally:
        endpoint.close()
    detail = f"{result.era} era ({result.detection})" if result.detection else f"{result.era} era"
    return Prepared(spec, "modern", surface, endpoint.fresh_processes, detail, dual=result.era == "dual",
                    packed_catalogue=packed, discover=_discover_result(result),
                    probe_findings=probe_findings)


def pack_catalogue(catalogue: Catalogue, definitions: bytes) -> bytes:
    """A catalogue and its definitions' JSON as `Prepared` holds them through the campaign."""
    return zlib.compress(pickle.dumps((catalogue, definitions), protocol=pickle.HIGHEST_PROTOCOL), 1)


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


# --- the whole campaign ---


def job_weights(jobs: list[Job], prepared: list[Prepared], props: dict[str, Property]) -> list[float]:
    """Each job's weight in the split of the time: its property's, or 0 where it does not apply."""
    by_target = {p.spec.text: p for p in prepared}
    return [props[j.property].weight if props[j.property].applicable(by_target[j.target].context()) is None
            else 0.0 for j in jobs]


def share_of_time_left(job: Job, left: float, weight: float, weight_left: float, workers: int) -> None:
    """Set a job's share when it starts, from the campaign's time left and the weight of the jobs
    not yet started (this one included), over `workers` running side by side; what earlier jobs
    did not use goes to the later ones, and an overrun (or the workers' start-up) is taken from
    them rather than added to the end. The last job gets all that is left."""
    left = max(left, 0.0)
    job.seconds = min(left, left * workers * weight / (weight_left or 1.0))
    job.shrink_seconds = min(job.shrink_seconds, job.seconds * 0.3)


def run_jobs_here(
    jobs: list[Job], prepared: list[Prepared], props: dict[str, Property], sink: Sink, *,
    database: ExampleDatabase | None, timeout: float, should_stop: Callable[[], bool] = lambda: False,
    runs: list[PropertyRun] | None = None, stop_on_first: bool = False, known: frozenset[str] = frozenset(),
    deadline: float | None = None, stop_on_rules: frozenset[str] = frozenset(),
    guidance: tuple[str, ...] = DEFAULT_GUIDANCE, compare: TargetSpec | None = None,
) -> list[PropertyRun]:
    """Run jobs in this process, one endpoint per target for all of them (warm processes and
    pools carry over from one property to the next); with `compare` (--compare-target) one more,
    of that target, beside each.

    `deadline` (with --duration): each job's share is recomputed when it starts, from the time
    left and the weights of the jobs left, so what one job did not use goes to the next ones and
    an overrun is taken from them rather than added to the end."""
    by_target = {p.spec.text: p for p in prepared}
    endpoints: dict[str, Endpoint] = {}
    runs = runs if runs is not None else []
    weights = job_weights(jobs, prepared, props)
    try:
        for k, job in enumerate(jobs):
            stop_request.stop_point()
            if should_stop():
                break
            if deadline is not None:
                share_of_time_left(job, deadline - time.monotonic(), weights[k], sum(weights[k:]), 1)
            prep = by_target[job.target]
            endpoint, other = _endpoints_for(prep.spec, endpoints, timeout, compare)
            try:
                runs.append(run_job(job, props[job.property], endpoint, prep.context(), sink,
                                    database=database, timeout=timeout, stop_on_first=stop_on_first, known=known,
                                    stop_on_rules=stop_on_rules, guidance=guidance, other=other))
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


def _endpoints_for(spec: TargetSpec, endpoints: dict[str, Endpoint], timeout: float,
                   compare: TargetSpec | None) -> tuple[Endpoint, tuple[Endpoint, str] | None]:
    """A job's endpoint, opened on first use and kept for the jobs after it, and with
    --compare-target the other target's beside it."""
    if spec.text not in endpoints:
        endpoints[spec.text] = open_endpoint(spec, timeout=max(timeout, 5.0))
    if compare is None:
        return endpoints[spec.text], None
    key = f"compare:{spec.text}"
    if key not in endpoints:
        endpoints[key] = open_endpoint(compare, timeout=max(timeout, 5.0))
    return endpoints[spec.text], (endpoints[key], compare.text)


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
        prepared = [prepare_target(spec, timeout=config.timeout, seed=config.seed) for spec in config.targets]
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
        # The reports are written after the last job, and worker processes close their targets and
        # exit (about 2 s measured, on a busy 2-core machine): keep the time for them.
        teardown = 0.5 + config.teardown_seconds + (WORKERS_TEARDOWN if config.workers > 1 else 0.0)
        deadline = origin + duration - min(teardown, duration * (0.02 + 0.18 * bool(
            config.teardown_seconds or config.workers > 1)))
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
                          deadline=deadline, stop_on_rules=config.stop_on_rules, guidance=config.guidance,
                          compare=config.compare_target)
        else:
            _run_workers(config, jobs, prepared, store, progress, runs, result, deadline=deadline)
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
    deadline: float | None = None,
) -> list[PropertyRun]:
    """K processes pull jobs from one queue and share the example database; findings come back
    to this process, which alone writes files. Ctrl-C here is forwarded to every worker.

    With --duration (`deadline`, this process's monotonic clock): the longest shares are queued
    first, so the last jobs to start are the short ones, and a worker sets a job's share when it
    takes it (`share_of_time_left`), so the workers' start-up and an uneven packing come out of
    the shares rather than on top of the duration (73 s for `--duration 60 --workers 2` before)."""
    ctx = multiprocessing.get_context("spawn")
    job_q: Any = ctx.Queue()
    out_q: Any = ctx.Queue()
    queued = sorted(jobs, key=lambda j: -(j.seconds or 0.0)) if deadline is not None else jobs
    weights = job_weights(queued, prepared, all_properties())
    for k, job in enumerate(queued):
        job_q.put({"job": asdict(job), "weight": weights[k], "weight_left": sum(weights[k:])})
    workers = max(1, min(config.workers, len(jobs)))
    for _ in range(workers):
        job_q.put(None)
    payload = {
        "prepared": [p.dump() for p in prepared], "database": config.database, "timeout": config.timeout,
        "stop_on_first": config.stop_on_first, "known": sorted(config.known), "guidance": list(config.guidance),
        # wall-clock time: Python does not promise that processes share a monotonic clock
        "deadline": time.time() + (deadline - time.monotonic()) if deadline is not None else None,
        "workers": workers,
        "compare": config.compare_target.text if config.compare_target is not None else None,
        "compare_isolated": bool(config.compare_target and config.compare_target.isolate_network),
    }
    procs = [ctx.Process(target=worker_main, args=(payload, job_q, out_q, i), name=f"mcp-tempest-worker-{i}")
             for i in range(workers)]
    for p in procs:
        p.start()
    sink = StoreSink(store, progress, result)
    try:
        while True:
            stop_request.stop_point()
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
        ev.materialize()  # the main process's store decides what it keeps
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
    with stop_request.honoured():
        _work(payload, job_q, out_q)


def _work(payload: dict[str, Any], job_q: Any, out_q: Any) -> None:
    prepared = [Prepared.load(p) for p in payload["prepared"]]
    props = all_properties()
    sink = _QueueSink(out_q)
    database = open_database(payload["database"])
    by_target = {p.spec.text: p for p in prepared}
    endpoints: dict[str, Endpoint] = {}
    compare = (parse_target(payload["compare"], allow_remote=True, isolate_network=payload["compare_isolated"])
               if payload.get("compare") else None)
    try:
        while True:
            stop_request.stop_point()
            item = job_q.get()
            if item is None:
                return
            job = Job(**item["job"])
            if payload["deadline"] is not None:
                share_of_time_left(job, payload["deadline"] - time.time(), item["weight"], item["weight_left"],
                                   payload["workers"])
            prep = by_target[job.target]
            endpoint, other = _endpoints_for(prep.spec, endpoints, payload["timeout"], compare)
            run_job(job, props[job.property], endpoint, prep.context(), sink, database=database,
                    timeout=payload["timeout"], stop_on_first=payload["stop_on_first"],
                    known=frozenset(payload["known"]), guidance=tuple(payload.get("guidance", DEFAULT_GUIDANCE)),
                    other=other)
    except KeyboardInterrupt:  # Interrupted included: its record already went to the parent
        return
    finally:
        for endpoint in endpoints.values():
            with contextlib.suppress(BaseException):
                endpoint.close()
        with contextlib.suppress(BaseException):
            out_q.close()
            out_q.join_thread()


# --- progress on stderr ---


class Progress:
    """A live bar when stderr is a terminal; otherwise one compact line per job and per finding."""

    def __init__(self, mode: str = "auto", stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        # a terminal that takes escapes: not NO_COLOR, --no-color or TERM=dumb (fuzz/terminal_style.py)
        self.live = mode == "bar" or (mode == "auto" and terminal_style.escapes_allowed(self.stream))
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
        # a title and a status may quote what the server wrote: shown escaped (fuzz/safe_text.py)
        label = terminal_style.severity(finding.label, terminal_style.colour_on(self.stream))
        self._line(f"fuzz: finding {finding.id}: {label} {finding.rule} {visible(finding.title)} "
                   f"[{finding.property}/{finding.transport}]")

    def job_done(self, run: PropertyRun) -> None:
        self.jobs_done += 1
        status = run.error or run.note or ("skipped" if run.skipped else "")
        if not self.live:
            self._line(f"fuzz: [{self.jobs_done}/{self.jobs_total}] {run.property}[{run.transport}] "
                       f"{run.examples} examples, {run.seconds:.1f} s" + (f" ({visible(status)})" if status else ""))
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
