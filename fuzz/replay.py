"""`mcp-tempest replay FILE [--target T] [--attempts N]`: play a reproduction again on a fresh target.

The file's case is played exactly as recorded, with the same process boundaries, every process
fresh; values the server minted the first time (requestState, handles) are taken from this
run's answers, as the bindings in the case say. The run is then judged by the same code as in
the campaign (the oracle plus the property's own check), under the same conditions the campaign
recorded in the file: its per-answer and start-up timeouts (a finding made with --timeout 20 is
judged with 20 s, or a slow answer would flip it), its era policy and the surface it learned,
and its working directory (a target such as `stdio:python tests/servers/x.py` means something
only there; a relative `cwd` is relative to the file's folder). A file without a case
(hand-written, or from an older version) is replayed from its transcript: every frame sent, in
order, one fresh process per recorded process.

Before the case is played the target is probed once: a target that does not start or does not
answer its first request could not run, which says nothing about the finding (exit 2, never 1).

A repro file is input, and a shared one is a script: every wait it carries is held to the range
`--timeout` takes (exit 2, one line), and the command line it records is printed before it runs,
with where (`RunPlace`: a recorded directory missing here is said, and the target runs from the
current one); `--target` (`--client` for a client repro) runs another instead.

"Still fails" means the recorded bug itself recurred: a violation with the file's own signature
(duty, reaction and probe, `fuzz.oracle.model.signature`). A violation of anything else, the same
rule broken another way included, is not that bug: it is reported as a different violation, so a
nightly triage never closes or keeps a finding on the strength of another one. A file written
before reactions were recorded (no `reaction` field) is matched by its rule, as it was then.

Exit status: 0 no longer fails (nothing was violated), 1 still fails (the recorded bug recurred;
with --attempts N, also when only some attempts show it: the finding is then labelled flaky),
2 unusable (bad file, or a target that could not run), 3 the recorded bug did not recur but a
different violation did (in at least one attempt). Once the file is read, the last stdout line is
fuzz/verdict_line.py's `final_line`, harness words only (a title may quote the server, so it is
on the line above): `replay: <id>, 2 attempts: FAIL (still fails: MUST RT-01, 2 of 2 attempts)`;
PASS (0), FAIL (1 and 3), ERROR (2: `<id>, not replayed`), INTERRUPTED (130).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import orjson

from mcp_tempest.fuzz.oracle.model import Signature, Violation, signature
from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import REASON_WIDTH, final_line, plural
from mcp_tempest.targets import auth_client, extra_headers, validate
from mcp_tempest.targets.transcript import Transcript

DEFAULT_TIMEOUT = 5.0
EXIT_NO_LONGER_FAILS, EXIT_STILL_FAILS, EXIT_UNUSABLE, EXIT_FAILS_DIFFERENTLY = 0, 1, 2, 3


def recorded_signature(doc: dict[str, Any]) -> Signature | None:
    """The bug a reproduction file records (None for a file from before reactions were recorded,
    or one that names no rule)."""
    rule, reaction = doc.get("rule"), doc.get("reaction")
    if not isinstance(rule, str) or not rule or not isinstance(reaction, str) or not reaction:
        return None
    return signature(rule, reaction, str(doc.get("title") or ""), doc.get("probe") or doc.get("mutation"))


class ReplayUsageError(Exception):
    """A file or target that cannot be replayed; the message is one line."""


@dataclass(slots=True)
class ReplayOutcome:
    finding_id: str
    rule: str | None
    target: str
    violations: list[Violation] = field(default_factory=list)
    transcript: Transcript | None = None
    label: str = ""  # the finding's label as recorded (`MUST`, `unconfirmed MUST`)
    # Whether the recorded rule must be broken again. A file without a case replays bare frames
    # without the case's expectations, so the same bug can surface under another rule (a death
    # after a blank line is then an unanswered request): any violation counts there.
    strict: bool = True
    recorded: Signature | None = None  # the file's own bug (recorded_signature)
    mutation: str | None = None  # the case's mutation, the probe of a violation that names none

    @property
    def same_rule(self) -> bool:
        return any(v.rule == self.rule for v in self.violations)

    def _is_recorded_bug(self, v: Violation) -> bool:
        if self.recorded is not None:
            return v.signature(self.mutation) == self.recorded
        return v.rule == self.rule

    @property
    def same_bug(self) -> bool:
        """A violation with the recorded signature (the recorded rule, for an older file)."""
        return any(self._is_recorded_bug(v) for v in self.violations)

    @property
    def still_fails(self) -> bool:
        """The recorded bug recurred (any violation, for a file that names no rule or has no case).
        Other violations alone are not this finding: they are a different violation, and would be
        findings of their own in a campaign."""
        return self.same_bug if self.rule and self.strict else bool(self.violations)

    @property
    def fails_differently(self) -> bool:
        return not self.still_fails and bool(self.violations)

    @property
    def outcome(self) -> str:
        return "still fails" if self.still_fails else "fails differently" if self.violations else "no longer fails"

    def describe(self) -> str:
        if self.fails_differently:
            v = self.violations[0]
            return (f"replay: {self.finding_id}: the recorded bug did not recur; a different violation did: "
                    f"{v.strength} {v.rule} {v.title}" + (f" (and {len(self.violations) - 1} more)"
                                                            if len(self.violations) > 1 else ""))
        if not self.still_fails:
            return f"replay: {self.finding_id} no longer fails on {self.target}"
        first = next((v for v in self.violations if self._is_recorded_bug(v)), self.violations[0])
        return f"replay: {self.finding_id} still fails: {first.strength} {first.rule} {first.title}"


@dataclass(slots=True)
class ReplayVerdict:
    """What N attempts of one replay said; flaky when they disagree."""

    attempts: list[ReplayOutcome]

    @property
    def failed(self) -> int:
        return sum(1 for o in self.attempts if o.still_fails)

    @property
    def flaky(self) -> bool:
        return 0 < self.failed < len(self.attempts)

    @property
    def still_fails(self) -> bool:
        return self.failed > 0

    @property
    def differed(self) -> int:
        return sum(1 for o in self.attempts if o.fails_differently)

    @property
    def outcome(self) -> str:
        return "still fails" if self.still_fails else "fails differently" if self.differed else "no longer fails"

    @property
    def exit_status(self) -> int:
        if self.still_fails:
            return EXIT_STILL_FAILS
        return EXIT_FAILS_DIFFERENTLY if self.differed else EXIT_NO_LONGER_FAILS

    def shown(self) -> ReplayOutcome:
        """The attempt that stands for the verdict: the last that failed as recorded, else the
        last that failed differently, else the last."""
        return next((o for o in reversed(self.attempts) if o.still_fails),
                    next((o for o in reversed(self.attempts) if o.fails_differently), self.attempts[-1]))

    def describe(self) -> str:
        n = len(self.attempts)
        if self.flaky:
            last = next(o for o in self.attempts if o.still_fails)
            return (f"replay: {last.finding_id} is flaky: failed {self.failed} of {n} attempts "
                    f"({last.describe().split(': ', 2)[-1]})")
        text = self.shown().describe()
        times = self.failed if self.still_fails else self.differed if self.differed else n
        return text + (f" ({times} of {n} attempts)" if n > 1 else "")

    def counts(self) -> str:
        """The last line's counts: which finding, how many attempts."""
        return f"{visible(self.shown().finding_id)}, {plural(len(self.attempts), 'attempt')}"

    def reason(self) -> str:
        """Why the last line's verdict, in `describe`'s words but the harness's own only (strength
        and rule, no title that may quote the server), so the line stays parseable."""
        n, shown = len(self.attempts), self.shown()
        first = next((v for v in shown.violations if shown._is_recorded_bug(v)),
                     shown.violations[0] if shown.violations else None)
        rule = f"{first.strength} {first.rule}" if first is not None else ""
        if self.flaky:
            return f"is flaky: failed {self.failed} of {n} attempts: {rule}"
        times = self.failed if self.still_fails else self.differed if self.differed else n
        of = f", {times} of {n} attempts" if n > 1 else ""
        if self.still_fails:
            return f"still fails: {rule}{of}"
        if self.differed:
            return f"the recorded bug did not recur; a different violation did: {rule}{of}"
        return f"no longer fails{of}"


def case_from_transcript(doc: dict[str, Any]) -> Case:
    """Every frame the transcript says was sent, in order, on the process it went to."""
    transcript = Transcript.from_json(doc["transcript"])
    steps: list[Step] = []
    for event in transcript.events:
        if event.kind != "send":
            continue
        msg = event.message
        expects_answer = isinstance(msg, dict) and "method" in msg and "id" in msg
        headers = event.headers if transcript.transport.http_semantics else None
        if headers:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        # The exact bytes go out again; the parsed frame is kept so its answer can be matched by id.
        steps.append(Step(proc=event.proc, raw=event.raw if event.raw is not None else orjson.dumps(msg),
                          frame=msg if expects_answer else None, headers=headers or None,
                          wait="response" if expects_answer else "none"))
    return Case(property=str(doc.get("property") or ""), steps=steps)


def recorded_timeouts(doc: dict[str, Any], timeout: float | None = None, name: str = "the file") -> tuple[float, float]:
    """(per-answer, start-up) seconds: an explicit `timeout` wins, else what the file recorded,
    else the defaults of `mcp-tempest fuzz`. A recorded value out of the range `--timeout` takes
    is refused (ReplayUsageError): a file is input like any option, and 1e9 would overflow a
    socket timeout while 1e6 would wait eleven days."""
    rec = _recorded_timeouts(doc, name)
    answer = timeout if timeout is not None else _file_seconds(rec.get("answer"), f"{name}: timeouts.answer")
    answer = DEFAULT_TIMEOUT if answer is None else answer
    start = _file_seconds(rec.get("start"), f"{name}: timeouts.start") if timeout is None else max(answer, 5.0)
    start = max(answer, DEFAULT_TIMEOUT) if start is None else start
    return answer, max(start, answer)


def _recorded_timeouts(doc: dict[str, Any], name: str) -> dict[str, Any]:
    rec = doc.get("timeouts")
    if rec is None:
        return {}
    if not isinstance(rec, dict):
        raise ReplayUsageError(f"{name}: timeouts must be an object (answer, start), not {type(rec).__name__}")
    return rec


def _file_seconds(value: Any, where: str, *, zero_ok: bool = False) -> float | None:
    """A number of seconds a file carries, held to the range of `--timeout` (`validate.seconds`,
    the one definition of that range); None when the file leaves it out (null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReplayUsageError(f"{where} must be a number of seconds, not {type(value).__name__}")
    try:
        return validate.seconds(value, where, zero_ok=zero_ok)
    except validate.InputError as exc:
        raise ReplayUsageError(str(exc)) from None


def check_file_timeouts(doc: dict[str, Any], name: str) -> None:
    """Every wait a reproduction file asks for, in range, before anything runs: the recorded
    timeouts, a step's own timeout, a client play's hold (ReplayUsageError, one line)."""
    recorded_timeouts(doc, name=name)
    case = doc.get("case") if isinstance(doc.get("case"), dict) else {}
    steps = case.get("steps") if isinstance(case.get("steps"), list) else []
    for i, step in enumerate(steps):
        if isinstance(step, dict):
            _file_seconds(step.get("timeout"), f"{name}: case.steps[{i}].timeout")
    plays = case.get("plays") if isinstance(case.get("plays"), dict) else {}
    for method, listed in plays.items():
        for i, play in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(play, dict):
                _file_seconds(play.get("hold"), f"{name}: case.plays[{method!r}][{i}].hold", zero_ok=True)


def recorded_cwd(doc: dict[str, Any], base: Path | None) -> Path | None:
    """The directory the campaign ran in (relative to `base`, the file's folder, when relative);
    None when the file names none or it does not exist here."""
    path = _recorded_path(doc, base)
    return path if path is not None and path.is_dir() else None


def _recorded_path(doc: dict[str, Any], base: Path | None) -> Path | None:
    cwd = doc.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    path = Path(cwd)
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    return path.resolve()


@dataclass(frozen=True, slots=True)
class RunPlace:
    """What a replay runs and where: the target, the directory it starts in (None: here), and
    whether it is the file's own (recorded) target.

    A recorded working directory that does not exist here is said, not refused: the target then
    runs from the current directory. Why: a repro shared by a colleague records their absolute
    checkout (/home/alice/project), which never exists on another machine, while the person
    replaying it stands in their own checkout of the same project, where a relative command
    (`stdio:python tests/servers/x.py`) means the same thing. Refusing would make every shared
    repro need hand-editing; running silently elsewhere would hide why a command did not start.
    If it cannot start, "could not run the target" (exit 2) follows the line that says where it ran.
    """

    target: str
    cwd: Path | None
    recorded: bool
    missing_cwd: Path | None = None  # the recorded directory, when it does not exist here

    def notice(self) -> str | None:
        """The line printed before a recorded target runs: a shared repro runs the command line it
        records, so the person replaying it is told what runs, where, and how to run another."""
        if not self.recorded:
            return None
        if self.cwd is not None:
            where = f"cwd {self.cwd}"
        elif self.missing_cwd is not None:
            where = f"cwd {Path.cwd()}: the recorded cwd {self.missing_cwd} does not exist here"
        else:
            where = f"cwd {Path.cwd()}: the file records none"
        return visible(f"replay: running the recorded target: {self.target} ({where}); "
                       "pass --target TARGET to replay against another")


def run_place(doc: dict[str, Any], target: str | None, base: Path | None) -> RunPlace:
    """Another target given on the command line runs from here; the recorded one from where it ran."""
    target_text = target or doc.get("target")
    if not isinstance(target_text, str) or not target_text:
        raise ReplayUsageError("the file names no target; pass --target")
    if target and target != doc.get("target"):
        return RunPlace(target_text, None, recorded=False)
    path = _recorded_path(doc, base)
    if path is not None and not path.is_dir():
        return RunPlace(target_text, None, recorded=True, missing_cwd=path)
    return RunPlace(target_text, path, recorded=True)


@contextlib.contextmanager
def working_directory(path: Path | None) -> Iterator[None]:
    """Run the target from `path` (process-wide: a replay is one thread), then go back."""
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def replay_document(
    doc: dict[str, Any], *, target: str | None = None, timeout: float | None = None, allow_remote: bool = False,
    base: Path | None = None, attempts: int = 1,
) -> ReplayOutcome:
    """Play and judge one reproduction (the last of `attempts`); raises ReplayUsageError when it
    cannot be played. See `replay_attempts` for all of them."""
    return replay_attempts(doc, target=target, timeout=timeout, allow_remote=allow_remote, base=base,
                           attempts=attempts).attempts[-1]


def replay_attempts(
    doc: dict[str, Any], *, target: str | None = None, timeout: float | None = None, allow_remote: bool = False,
    base: Path | None = None, attempts: int = 1, isolate_network: bool = False,
) -> ReplayVerdict:
    """Probe the target once, then play and judge the reproduction `attempts` times on fresh
    processes, under the conditions the file recorded."""
    place = run_place(doc, target, base)
    answer, start = recorded_timeouts(doc, timeout)
    with working_directory(place.cwd):
        return ReplayVerdict([_play(doc, place.target, answer, start, allow_remote, probe_first=(i == 0),
                                    isolate_network=isolate_network) for i in range(max(1, attempts))])


def _play(doc: dict[str, Any], target_text: str, timeout: float, start: float, allow_remote: bool, *,
          probe_first: bool, isolate_network: bool = False) -> ReplayOutcome:
    from mcp_tempest.fuzz.campaign import Prepared
    from mcp_tempest.fuzz.properties.base import Context, Property, all_properties
    from mcp_tempest.fuzz.properties.judging import judge_run
    from mcp_tempest.fuzz.properties.surface import Surface
    from mcp_tempest.targets.probe import ProbeFailure, probe
    from mcp_tempest.targets.target_spec import TargetError, parse_target

    try:
        spec = parse_target(target_text, allow_remote=allow_remote, isolate_network=isolate_network)
    except TargetError as exc:
        raise ReplayUsageError(str(exc)) from None
    from mcp_tempest.fuzz.catalogue import PROPERTY as CATALOGUE_PROPERTY

    if doc.get("property") == CATALOGUE_PROPERTY:  # found by reading the catalogue: replayed by reading it
        return _play_catalogue(doc, spec, max(timeout, start))
    has_case = isinstance(doc.get("case"), dict)
    try:
        case = Case.from_json(doc["case"]) if has_case else case_from_transcript(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayUsageError(f"the file's case cannot be read: {exc}") from None
    case.warm = []  # a replay starts every process fresh
    recorded = doc.get("context") if isinstance(doc.get("context"), dict) else None
    dual = False
    if probe_first:
        try:
            found = probe(spec, timeout=start, check_dual=recorded is None)
        except ProbeFailure as exc:
            raise ReplayUsageError(f"could not run the target {spec.text}: {exc}") from None
        dual = found.era == "dual"
    props = all_properties()
    prop: Property = props.get(case.property) or _OracleOnly()
    if recorded is not None:
        try:
            ctx = Prepared.load({**recorded, "spec": spec.text}).context()
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayUsageError(f"the file's recorded context cannot be read: {exc}") from None
        ctx.transport = spec.transport
    else:
        ctx = Context(transport=spec.transport, era="modern", fresh_processes=spec.kind != "http",
                      surface=Surface(), target=spec.text, dual=dual)
    run = _run_case(case, spec, timeout, start, f"the target {spec.text}")
    if _unreachable(run.transcript):
        raise ReplayUsageError(f"could not run the target {spec.text}: every request failed to connect")
    violations = judge_run(prop, run, ctx)
    compare = doc["case"].get("compare") if has_case else None
    if not violations and isinstance(compare, dict) and compare.get("target"):
        violations = _compare_again(case, run, str(compare["target"]), timeout, start, allow_remote, isolate_network)
    return ReplayOutcome(str(doc.get("id") or "reproduction"), doc.get("rule"), spec.text, violations,
                         run.transcript, label=str(doc.get("label") or doc.get("strength") or ""), strict=has_case,
                         recorded=recorded_signature(doc), mutation=doc.get("mutation"))


def _run_case(case: Case, spec: Any, timeout: float, start: float, what: str) -> Any:
    """The case played once on fresh processes of `spec`; ReplayUsageError when it cannot be."""
    from mcp_tempest.fuzz.properties.executor import HarnessError, execute
    from mcp_tempest.targets.endpoints import open_endpoint

    endpoint = open_endpoint(spec, timeout=start)
    try:
        return execute(case, endpoint, reuse=False, timeout=timeout)
    except HarnessError as exc:
        raise ReplayUsageError(f"could not run {what}: {exc}") from None
    finally:
        endpoint.close()


def _compare_again(case: Case, run: Any, other_text: str, timeout: float, start: float, allow_remote: bool,
                   isolate_network: bool) -> list[Violation]:
    """A difference between targets (fuzz --compare-target) is replayed as it was found: the
    case played on the target the file recorded it was compared with, the answers compared."""
    from mcp_tempest.fuzz.differences import difference_violation, differences
    from mcp_tempest.targets.target_spec import TargetError, parse_target

    try:
        other = parse_target(other_text, allow_remote=allow_remote, isolate_network=isolate_network)
    except TargetError as exc:
        raise ReplayUsageError(f"the target it was compared with: {exc}") from None
    print(f"replay: comparing with the recorded other target: {visible(other.text)}")
    other_run = _run_case(case, other, timeout, start, f"the target it was compared with, {other.text}")
    found = differences(run, other_run)
    return [difference_violation(found, run, other.text)] if found else []


def _play_catalogue(doc: dict[str, Any], spec: Any, timeout: float) -> ReplayOutcome:
    """A catalogue finding (drift, a pagination loop, untrusted text) is no frame sequence: it is
    what reading the catalogue showed. So the catalogue is read again the way the finding read it
    (a drift finding: twice on one process and once on a fresh one; the others: once) and judged
    by the same code as `mcp-tempest catalogue`; the recorded bug is matched by its signature."""
    from mcp_tempest.fuzz.catalogue import Catalogue, catalogue_evidence, read
    from mcp_tempest.targets.probe import ProbeFailure

    case = doc.get("case") if isinstance(doc.get("case"), dict) else {}
    try:
        reading = read(spec, timeout=timeout, drift="between" in case)
    except ProbeFailure as exc:
        raise ReplayUsageError(f"could not run the target {spec.text}: {exc}") from None
    cat = Catalogue.from_probe(reading.first)
    violations = [Violation.from_json(v) for ev in catalogue_evidence(reading, cat) for v in ev.violations]
    return ReplayOutcome(str(doc.get("id") or "reproduction"), doc.get("rule"), spec.text, violations,
                         reading.transcript, label=str(doc.get("label") or doc.get("strength") or ""),
                         recorded=recorded_signature(doc), mutation=doc.get("mutation"))


def _unreachable(transcript: Transcript) -> bool:
    if not transcript.transport.pairs_by_request:
        return False
    sends = [i for i, e in enumerate(transcript.events) if e.kind == "send"]
    if not sends:
        return False
    refused = {e.ref for e in transcript.events if e.kind == "error" and "refused" in e.note}
    return all(i in refused for i in sends)


class _OracleOnly:
    """Judging for a case whose property is unknown here: the oracle alone."""

    name = ""

    def check(self, run: Any, ctx: Any) -> list[Violation]:
        return []


# --- the command ---


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ReplayUsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mcp-tempest replay",
                description="Re-run one reproduction file (DIR/repro/<id>.json) on a fresh target and re-judge it, "
                            "with the timeouts, era policy and working directory the file recorded.",
                epilog="Exit status: 0 no longer fails, 1 still fails: the recorded bug (duty, reaction, probe) "
                       "recurred (also when flaky: some of --attempts showed it), 2 unusable file or a target that "
                       "could not run, 3 the recorded bug did not recur but a different violation did.")
    p.add_argument("file", help="a reproduction file written by `mcp-tempest fuzz`")
    p.add_argument("--target", help="replay against this target (run from the current directory) instead of the "
                                    "one in the file (run from the directory the campaign ran in)")
    p.add_argument("--compare-target", metavar="OTHER",
                   help="a difference between targets (fuzz --compare-target): compare with OTHER instead of the "
                        "target the file recorded")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="wait per answer (default: what the campaign used, as recorded in the file; else 5)")
    p.add_argument("--attempts", type=int, default=1, metavar="N",
                   help="replay N times on fresh processes; the finding is flaky when they disagree (default 1)")
    p.add_argument("--client", metavar="CMD", help="a client finding: replay against this client command instead")
    p.add_argument("--show", action="store_true", help="print the new transcript")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    extra_headers.add_option(p)
    auth_client.add_options(p)  # a finding recorded under --auth starts an authorization server by itself
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback HTTP target")
    p.add_argument("--isolate-network", action="store_true",
                   help="start each server in a network namespace of its own with only a loopback, so a tool that "
                        "fetches a generated URL reaches nothing (stdio: and http+spawn: targets; Linux, root)")
    return p


def replay_main(argv: list[str]) -> int:
    from mcp_tempest.fuzz.findings import load_repro

    auth: auth_client.Session | None = None
    name = ""  # set once the file is read: from then on every end is a last line (final_line)
    try:
        args = build_parser().parse_args(argv)
        validate.seconds(args.timeout, "--timeout")  # an InputError is a ValueError: one line below
        if not 1 <= args.attempts <= 100:
            raise ReplayUsageError("--attempts must be between 1 and 100")
        extra_headers.configure(args.header)  # a HeaderError is a ValueError: one line, exit 2
        path = Path(args.file)
        doc = load_repro(path)
        name = str(doc.get("id") or path.name)
        check_file_timeouts(doc, str(path))
        compare = doc.get("case", {}).get("compare") if isinstance(doc.get("case"), dict) else None
        if args.compare_target and not isinstance(compare, dict):
            raise ReplayUsageError("--compare-target applies to a difference between targets, and this file is none")
        if args.compare_target:
            compare["target"] = args.compare_target
        from mcp_tempest.fuzz.client.replay import (
            is_client_repro,
            recorded_client_notice,
            replay_client_document,
        )

        recorded_auth = auth_client.needs_issuer([orjson.dumps(doc).decode(), args.target or ""])
        auth = auth_client.start(args.auth or (recorded_auth and auth_client.active_issuer() is None),
                                 args.auth_issuer)
        notice = (recorded_client_notice(doc, args.client) if is_client_repro(doc)
                  else run_place(doc, args.target, path.resolve().parent).notice())
        if notice:
            print(notice, flush=True)  # before it runs: a shared repro is a script
        if is_client_repro(doc):
            verdict = ReplayVerdict([replay_client_document(doc, client=args.client, timeout=args.timeout)
                                     for _ in range(args.attempts)])
        else:
            verdict = replay_attempts(doc, target=args.target, timeout=args.timeout, allow_remote=args.allow_remote,
                                      base=path.resolve().parent, attempts=args.attempts,
                                      isolate_network=args.isolate_network)
    except (ReplayUsageError, ValueError, auth_client.AuthServerError) as exc:
        print(f"mcp-tempest replay: {visible(exc)}", file=sys.stderr)
        if name:
            print(final_line("replay", f"{visible(name)}, not replayed", EXIT_UNUSABLE, [visible(exc, REASON_WIDTH)]))
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print(final_line("replay", f"{visible(name or 'reproduction')}, not replayed", 130, ["interrupted"]))
        return 130
    finally:
        if auth is not None:
            auth.close()
    outcome = verdict.shown()
    if args.show and outcome.transcript is not None:
        from mcp_tempest.fuzz.reports import render_transcript_text

        print("\n".join(render_transcript_text(outcome.transcript.to_json())))
    if args.json:
        print(orjson.dumps({
            "id": outcome.finding_id, "target": outcome.target, "label": outcome.label,
            "outcome": verdict.outcome, "still_fails": verdict.still_fails, "same_bug": outcome.same_bug,
            "same_rule": outcome.same_rule, "flaky": verdict.flaky,
            "recorded": list(outcome.recorded) if outcome.recorded else None,
            "attempts": len(verdict.attempts), "failed_attempts": verdict.failed,
            "violations": [v.to_json() for v in outcome.violations],
        }).decode())
    else:
        if outcome.label.startswith("unconfirmed"):
            print(f"  recorded as {outcome.label}: the campaign did not see it on fresh processes")
        for v in outcome.violations:
            print(visible(f"  {v.strength} {v.rule}: {v.title}" + (f" ({v.detail})" if v.detail else "")))
    print(visible(verdict.describe()))  # titles and details quote what the server answered
    print(final_line("replay", verdict.counts(), verdict.exit_status, [verdict.reason()]))
    return verdict.exit_status
