"""`mcp-gauntlet replay FILE [--target T]`: play a reproduction again on a fresh target.

The file's case is played exactly as recorded, with the same process boundaries, every process
fresh; values the server minted the first time (requestState, handles) are taken from this
run's answers, as the bindings in the case say. The run is then judged by the same code as in
the campaign (the oracle plus the property's own check), so "still fails" means what "failed"
meant. A file without a case (hand-written, or from an older version) is replayed from its
transcript: every frame sent, in order, one fresh process per recorded process.

Exit status: 0 no longer fails, 1 still fails, 2 unusable (bad file, target cannot be started).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import orjson

from fuzz.oracle.model import Violation
from fuzz.properties.case import Case, Step
from targets import extra_headers, validate
from targets.transcript import Transcript


class ReplayUsageError(Exception):
    """A file or target that cannot be replayed; the message is one line."""


@dataclass(slots=True)
class ReplayOutcome:
    finding_id: str
    rule: str | None
    target: str
    violations: list[Violation] = field(default_factory=list)
    transcript: Transcript | None = None

    @property
    def still_fails(self) -> bool:
        return bool(self.violations)

    @property
    def same_rule(self) -> bool:
        return any(v.rule == self.rule for v in self.violations)

    def describe(self) -> str:
        if not self.violations:
            return f"replay: {self.finding_id} no longer fails on {self.target}"
        first = next((v for v in self.violations if v.rule == self.rule), self.violations[0])
        return f"replay: {self.finding_id} still fails: {first.strength} {first.rule} {first.title}"


def case_from_transcript(doc: dict[str, Any]) -> Case:
    """Every frame the transcript says was sent, in order, on the process it went to."""
    transcript = Transcript.from_json(doc["transcript"])
    steps: list[Step] = []
    for event in transcript.events:
        if event.kind != "send":
            continue
        msg = event.message
        expects_answer = isinstance(msg, dict) and "method" in msg and "id" in msg
        headers = event.headers if transcript.transport == "http" else None
        if headers:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        # The exact bytes go out again; the parsed frame is kept so its answer can be matched by id.
        steps.append(Step(proc=event.proc, raw=event.raw if event.raw is not None else orjson.dumps(msg),
                          frame=msg if expects_answer else None, headers=headers or None,
                          wait="response" if expects_answer else "none"))
    return Case(property=str(doc.get("property") or ""), steps=steps)


def replay_document(
    doc: dict[str, Any], *, target: str | None = None, timeout: float = 5.0, allow_remote: bool = False,
) -> ReplayOutcome:
    """Play and judge one reproduction; raises ReplayUsageError when it cannot be played."""
    from fuzz.properties.base import Context, Property, all_properties
    from fuzz.properties.endpoints import open_endpoint
    from fuzz.properties.executor import HarnessError, execute
    from fuzz.properties.judging import judge_run
    from fuzz.properties.surface import Surface
    from targets.target_spec import TargetError, parse_target

    target_text = target or doc.get("target")
    if not isinstance(target_text, str) or not target_text:
        raise ReplayUsageError("the file names no target; pass --target")
    try:
        spec = parse_target(target_text, allow_remote=allow_remote)
    except TargetError as exc:
        raise ReplayUsageError(str(exc)) from None
    try:
        case = Case.from_json(doc["case"]) if isinstance(doc.get("case"), dict) else case_from_transcript(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayUsageError(f"the file's case cannot be read: {exc}") from None
    case.warm = []  # a replay starts every process fresh
    props = all_properties()
    prop: Property = props.get(case.property) or _OracleOnly()
    ctx = Context(transport=spec.transport, era="modern", fresh_processes=spec.kind != "http",
                  surface=Surface(), target=spec.text)
    endpoint = open_endpoint(spec, timeout=max(timeout, 5.0))
    try:
        run = execute(case, endpoint, reuse=False, timeout=timeout)
    except HarnessError as exc:
        raise ReplayUsageError(str(exc)) from None
    finally:
        endpoint.close()
    if _unreachable(run.transcript):
        raise ReplayUsageError(f"cannot reach {spec.text}: every request failed to connect")
    violations = judge_run(prop, run, ctx)
    return ReplayOutcome(str(doc.get("id") or "reproduction"), doc.get("rule"), spec.text, violations, run.transcript)


def _unreachable(transcript: Transcript) -> bool:
    if transcript.transport != "http":
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
    p = _Parser(prog="mcp-gauntlet replay",
                description="Re-run one reproduction file (DIR/repro/<id>.json) on a fresh target and re-judge it.",
                epilog="Exit status: 0 no longer fails, 1 still fails, 2 unusable file or target.")
    p.add_argument("file", help="a reproduction file written by `mcp-gauntlet fuzz`")
    p.add_argument("--target", help="replay against this target instead of the one in the file")
    p.add_argument("--client", metavar="CMD", help="a client finding: replay against this client command instead")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS", help="wait per answer (default 5)")
    p.add_argument("--show", action="store_true", help="print the new transcript")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="send this header on every HTTP request, as `fuzz --header` (e.g. 'Authorization: Bearer ${TOKEN}')")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback HTTP target")
    return p


def replay_main(argv: list[str]) -> int:
    from fuzz.findings import load_repro

    try:
        args = build_parser().parse_args(argv)
        validate.seconds(args.timeout, "--timeout")  # an InputError is a ValueError: one line below
        extra_headers.configure(args.header)  # a HeaderError is a ValueError: one line, exit 2
        doc = load_repro(Path(args.file))
        from fuzz.client.replay import is_client_repro, replay_client_document

        if is_client_repro(doc):
            outcome = replay_client_document(doc, client=args.client, timeout=args.timeout)
        else:
            outcome = replay_document(doc, target=args.target, timeout=args.timeout, allow_remote=args.allow_remote)
    except (ReplayUsageError, ValueError) as exc:
        print(f"mcp-gauntlet replay: {exc}", file=sys.stderr)
        return 2
    if args.show and outcome.transcript is not None:
        from fuzz.reports import render_transcript_text

        print("\n".join(render_transcript_text(outcome.transcript.to_json())))
    if args.json:
        print(orjson.dumps({
            "id": outcome.finding_id, "target": outcome.target, "still_fails": outcome.still_fails,
            "same_rule": outcome.same_rule, "violations": [v.to_json() for v in outcome.violations],
        }).decode())
    else:
        for v in outcome.violations:
            print(f"  {v.strength} {v.rule}: {v.title}" + (f" ({v.detail})" if v.detail else ""))
    print(outcome.describe())
    return 1 if outcome.still_fails else 0
