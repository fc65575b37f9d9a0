"""The client campaign: Hypothesis draws scripted servers, the client runs once per case, the
client rules judge, failures shrink, and findings land on disk as for a server campaign.

One Hypothesis test per transport. Each distinct bucket (rule, method, probe, transport) is a
distinct exception type raised from one line, so Hypothesis shrinks every bug on its own; every
failing execution is offered to the `FindingStore`, which keeps the smallest, so what shrinking
reaches is what the repro file holds, even if the shrink budget runs out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from mcp_tempest.fuzz.client.behaviours import client_cases, coverage_cases
from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.fuzz.client.runner import ClientCommand, run_case
from mcp_tempest.fuzz.findings import Evidence, FindingStore, PropertyRun, strength_rank
from mcp_tempest.fuzz.hypothesis_compat import (
    choices_to_bytes,
    current_build_context,
    encode_failure,
    prime_unicode_tables,
    set_database_key,
    set_seed,
    shrink_time_limit,
    skip_local_constants,
)
from mcp_tempest.fuzz.oracle.client_rules import judge_client
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.targets.transcript import Transcript

PROPERTY = "client-job"


@dataclass(slots=True)
class ClientCampaign:
    command: ClientCommand
    seed: int
    max_examples: int = 50
    duration: float | None = None
    timeout: float = 20.0
    shrink_seconds: float = 30.0
    database: str | None = None


@dataclass(slots=True)
class ClientCampaignResult:
    runs: list[PropertyRun] = field(default_factory=list)
    examples: int = 0
    seconds: float = 0.0
    interrupted: bool = False


class _Failure(Exception):
    bucket: tuple[str, str, str, str] = ("", "", "", "")


_TYPES: dict[tuple[str, str, str, str], type[_Failure]] = {}


def _failure_type(bucket: tuple[str, str, str, str]) -> type[_Failure]:
    if bucket not in _TYPES:
        name = "ClientFinding_" + "_".join(p.replace("/", "_").replace("-", "_") or "x" for p in bucket)
        _TYPES[bucket] = type(name, (_Failure,), {"bucket": bucket})
    return _TYPES[bucket]


class _Budget(BaseException):  # noqa: N818 - a control-flow signal
    """Time is up: leave Hypothesis, keeping what was found."""


def primary(violations: list[Violation]) -> Violation:
    """The violation a finding is filed under: the strongest, then the earliest."""
    return min(violations, key=lambda v: (strength_rank(v.strength), v.event_index or 0))


def evidence_for(case: ClientCase, transcript: Transcript, violations: list[Violation], *, command: ClientCommand,
                 blob: str | None = None, main: Violation | None = None) -> Evidence:
    main = main or primary(violations)
    return Evidence(
        rule=main.rule, strength=main.strength, title=main.title, method=main.method,
        transport=command.transport, mutation=main.probe, property=PROPERTY, case=case.to_json(),
        transcript=transcript.to_json(), violations=[v.to_json() for v in violations],
        reproduce_blob=blob, hypothesis_version=hypothesis.__version__, target=command.template,
    )


def evidences_for(case: ClientCase, transcript: Transcript, violations: list[Violation], *,
                  command: ClientCommand, blob: str | None = None) -> list[Evidence]:
    """One evidence per distinct violation of a run (rule, title, method, probe), the primary
    first. Why not only the primary: a careless client breaks several rules in one run (a null
    id, a request without _meta, a reused id); filed under the strongest-earliest alone, the
    others (META-04 behind RPC-04) were never reported. Each carries every violation of the run."""
    ordered = sorted(violations, key=lambda v: (strength_rank(v.strength), v.event_index or 0))
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Evidence] = []
    for v in ordered:
        key = (v.rule, v.title, v.method or "", v.probe or "")
        if key not in seen:
            seen.add(key)
            out.append(evidence_for(case, transcript, violations, command=command, blob=blob, main=v))
    return out


def run_client_campaign(config: ClientCampaign, store: FindingStore) -> ClientCampaignResult:
    started = time.monotonic()
    command = config.command
    gen_deadline = started + config.duration if config.duration is not None else float("inf")
    hard_deadline = gen_deadline + config.shrink_seconds
    state = {"executions": 0, "failures": 0}
    cache: dict[bytes, tuple[type[_Failure], str] | None] = {}

    def outcome(case: ClientCase) -> tuple[type[_Failure], str] | None:
        build = current_build_context()
        key = choices_to_bytes(build.data.choices)
        if key in cache:
            return cache[key]
        now = time.monotonic()
        if not build.is_final and (now > hard_deadline or (now > gen_deadline and not state["failures"])):
            raise _Budget()
        transcript = run_case(command, case, timeout=config.timeout)
        violations = judge_client(transcript)
        state["executions"] += 1
        store.add_examples(1)
        if not violations:
            cache[key] = None
            return None
        state["failures"] += 1
        blob = encode_failure(build.data.choices).decode("ascii")
        found = evidences_for(case, transcript, violations, command=command, blob=blob)
        for ev in found:
            store.record(ev)
        ev = found[0]
        main = primary(violations)
        cache[key] = (_failure_type(ev.member_key()), f"{main.strength} {main.rule}: {main.title}")
        return cache[key]

    def body(case: ClientCase) -> None:
        failure = outcome(case)
        if failure is not None:
            exc_type, message = failure
            raise exc_type(message)

    def cover() -> None:
        """The coverage phase: every named probe once, in a fixed order, before Hypothesis explores."""
        for _name, case in coverage_cases(command.transport):
            if time.monotonic() > gen_deadline or state["executions"] >= config.max_examples:
                return
            transcript = run_case(command, case, timeout=config.timeout)
            violations = judge_client(transcript)
            state["executions"] += 1
            store.add_examples(1)
            if violations:
                state["failures"] += 1
                for ev in evidences_for(case, transcript, violations, command=command):
                    store.record(ev)

    note = error = ""
    interrupted = False
    try:
        cover()
        left = config.max_examples - state["executions"]
        if config.duration is not None or left > 0:
            test_settings = settings(
                max_examples=left if config.duration is None else 1_000_000,
                database=DirectoryBasedExampleDatabase(config.database) if config.database else None,
                deadline=None, derandomize=False, suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
                print_blob=False, phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
                verbosity=Verbosity.quiet,
            )
            set_database_key(body, f"{PROPERTY}|{command.transport}|{command.template}".encode())
            test = test_settings(given(client_cases(command.transport))(body))
            set_seed(test, config.seed)
            prime_unicode_tables()
            skip_local_constants()
            with shrink_time_limit(config.shrink_seconds):
                test()
    except _Budget:
        note = "stopped at its time budget"
    except _Failure:
        pass
    except KeyboardInterrupt:
        interrupted = True
    except BaseExceptionGroup as group:
        others = [e for e in _flatten(group) if not isinstance(e, _Failure | _Budget)]
        interrupted = any(isinstance(e, KeyboardInterrupt) for e in others)
        others = [e for e in others if not isinstance(e, KeyboardInterrupt)]
        if others:
            error = f"{type(others[0]).__name__}: {others[0]}"
    seconds = time.monotonic() - started
    run = PropertyRun(PROPERTY, command.transport, examples=state["executions"], seconds=seconds,
                      note="interrupted" if interrupted else note, error=error)
    return ClientCampaignResult(runs=[run], examples=state["executions"], seconds=seconds, interrupted=interrupted)


def _flatten(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_flatten(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def replay_case(command: ClientCommand, case: ClientCase, *, timeout: float = 20.0) -> tuple[Transcript, list[Violation]]:
    """Run one recorded case again and judge it as the campaign did."""
    transcript = run_case(command, case, timeout=timeout)
    return transcript, judge_client(transcript)


def out_dir_default(now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path("tempest-out") / f"fuzz-client-{stamp}"
