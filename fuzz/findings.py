"""Findings: violations bucketed into the few distinct bugs a person has to read about.

A campaign sees the same bug many times (every example that trips it, every shrink step, every
method, transport and probe that shows it), so violations are grouped by behaviour: the server's
duty broken, and the server's observed reaction (no reply; an error with the wrong code; a result
where an error is due; the process exited ...), worded for the class of frame it reacted to (a
frame that is not JSON and valid JSON that is not a valid request stay apart: two code paths).
The probe (mutation) is not part of the key: thirteen mutations that meet one silent code path
are one finding that lists the thirteen, each with its count and its own smallest reproduction.
Each finding lists where it was seen (methods, transports, properties, with per-place counts)
and keeps its smallest evidence on disk as soon as the finding exists: a campaign killed a second
later still leaves a replayable file behind.

A finding fails the campaign when it was confirmed on fresh processes and is at or above
`--fail-on` (default SHOULD); any other is an observation, shown but never an exit status of 1.
An unconfirmed finding is labelled so (`unconfirmed MUST`) wherever it appears.

Files written under the campaign's out directory (the format is a promise, see CLI.md):
  findings.json       the index, rewritten atomically after every change
  repro/<id>.json     one reproduction per finding: target, seed, Hypothesis blob, the case
                      (frames with their process boundaries), the transcript, and what the
                      verdict depended on (timeouts, era policy, working directory, command)
  repro/<id>.<probe>.json  the smallest reproduction of each probe that provoked the finding
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.oracle.model import Signature, signature
from mcp_tempest.strategies.json_bounds import MAX_WRITTEN_DEPTH, cut_deep
from mcp_tempest.targets import validate
from mcp_tempest.targets.bounded_read import read_bounded
from mcp_tempest.targets.wire import MODERN_VERSION

REPRO_FORMAT = "mcp-tempest/repro-1"
STRENGTHS = ("MUST", "SHOULD", "HEURISTIC")
_STRENGTH_RANK = {name: i for i, name in enumerate(STRENGTHS)}


@dataclass(slots=True)
class Evidence:
    """One failing execution, as the runner saw it: what broke and the whole exchange.

    `rule` is the server's duty that was broken; `probe` (the mutation) and `probe_rule` (the
    rule the probe frame itself breaks, a client duty) say how the fuzzer provoked it.
    """

    rule: str
    strength: str
    title: str
    method: str | None
    transport: str
    mutation: str | None
    property: str
    case: dict[str, Any]
    transcript: dict[str, Any]
    violations: list[dict[str, Any]] = field(default_factory=list)
    reproduce_blob: str | None = None
    hypothesis_version: str | None = None
    note: str = ""
    target: str = ""  # the target spec this transport was fuzzed through (the replay default)
    confirmed: bool = True  # reproduced on fresh processes (False: seen only after earlier examples)
    probe: str | None = None
    probe_rule: str | None = None
    reaction: str = ""  # the server's reaction, worded without the probe (Violation.reaction)
    _size: tuple[int, int, int] | None = field(default=None, repr=False, compare=False)
    # The live transcript `transcript` is made from when the store keeps this evidence (see
    # `of_transcript`); None once made, or for evidence given as JSON.
    source: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of_transcript(cls, transcript: Any, **fields: Any) -> Evidence:
        """Evidence whose transcript JSON is made only if the store keeps it (`materialize`).

        Why: most failing examples repeat a finding already filed with a smaller reproduction, and
        the JSON of a transcript that received a 12 MB list page six times is six decoded copies
        of it; the store sizes the transcript an event at a time and drops what it does not keep."""
        return cls(transcript={}, source=transcript, **fields)

    def materialize(self) -> None:
        """Make `transcript` from the live one (a no-op when it is made already)."""
        if self.source is not None:
            self.transcript = self.source.to_json()
            self.source = None

    def member_key(self) -> tuple[str, str, str, str]:
        """Where the bug was seen: one row of a finding's per-method detail."""
        return (self.rule, self.method or "", self.mutation or "", self.transport)

    def group_key(self) -> tuple[str, str]:
        """What makes two executions the same bug: the duty broken and the server's reaction
        (for a probe frame, worded for its class of frame; otherwise the title, which names the
        behaviour). Probe, method and transport are not part of it: one silent parser is one bug
        however many mutations reach it, one missing resultType however many methods show it."""
        return (self.rule, f"behaviour:{self.reaction or self.title}")

    def signature(self) -> Signature:
        """What a replay must see again to say "still fails": duty, reaction and probe."""
        return signature(self.rule, self.reaction, self.title, self.probe_name)

    @property
    def probe_name(self) -> str | None:
        return self.probe or self.mutation

    def size(self) -> tuple[int, int, int]:
        """How good the reproduction is, smaller first: confirmed before unconfirmed, then frames
        sent, then bytes. Measured once (the store compares the kept evidence with every new one,
        and a transcript that received a 9 MB list five times is 45 MB encoded)."""
        if self._size is None:
            if self.source is not None:
                sent = sum(1 for e in self.source.events if e.kind == "send")
                size = transcript_size(self.source)
            else:
                events = self.transcript.get("events", [])
                sent = sum(1 for e in events if e.get("kind") == "send")
                size = encoded_size(self.transcript)
            self._size = (0 if self.confirmed else 1), sent, size
        return self._size


@dataclass(slots=True)
class Sighting:
    """One method/transport/property where a finding was seen, with its own count and strength."""

    method: str | None
    transport: str
    mutation: str | None
    property: str
    strength: str
    title: str
    count: int = 0
    confirmed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "transport": self.transport, "mutation": self.mutation,
                "property": self.property, "strength": self.strength, "title": self.title,
                "count": self.count, "confirmed": self.confirmed}


@dataclass(slots=True)
class ProbeRecord:
    """One probe that provoked a finding: how often, and its own smallest reproduction (so that
    folding thirteen mutations into one finding loses none of their evidence)."""

    probe: str
    probe_rule: str | None
    evidence: Evidence
    repro: str
    count: int = 0
    missing: str = ""  # why its repro file could not be written (the finding is kept regardless)

    def to_json(self, repro: str | None = None) -> dict[str, Any]:
        out = {"probe": self.probe, "probe_rule": self.probe_rule, "count": self.count,
               "confirmed": self.evidence.confirmed, "repro": repro or self.repro}
        if self.missing and not repro:
            out["repro_missing"] = self.missing
        return out


FAIL_ON_CHOICES = ("must", "should", "heuristic")
DEFAULT_FAIL_ON = "should"


@dataclass(slots=True)
class Finding:
    """One bug: every execution with the same root cause, wherever it was seen.

    `method`/`transport`/`property` are those of the kept (smallest) evidence; `methods`,
    `transports` and `properties` list everywhere it was seen, and `sightings` the detail.
    """

    id: str
    rule: str
    strength: str
    title: str
    method: str | None
    transport: str
    mutation: str | None
    count: int
    repro: str
    property: str
    properties: list[str]
    evidence: Evidence
    flaky: bool = False
    sightings: dict[tuple[str, str, str, str], Sighting] = field(default_factory=dict)
    probes: dict[str, ProbeRecord] = field(default_factory=dict)
    # Why `repro` could not be written, or what had to be left out of it to write it; empty when
    # the file holds the whole kept evidence. A finding is never lost for its repro.
    repro_missing: str = ""
    repro_note: str = ""

    @property
    def confirmed(self) -> bool:
        """Reproduced on fresh processes at least once (the kept evidence prefers such a run)."""
        return self.evidence.confirmed

    @property
    def label(self) -> str:
        """How the finding is named wherever it is shown: `MUST`, or `unconfirmed MUST`."""
        return self.strength if self.confirmed else f"unconfirmed {self.strength}"

    @property
    def methods(self) -> list[str]:
        return sorted({s.method for s in self.sightings.values() if s.method})

    @property
    def transports(self) -> list[str]:
        return sorted({s.transport for s in self.sightings.values()})

    @property
    def probe(self) -> str | None:
        return self.evidence.probe_name

    @property
    def probe_rule(self) -> str | None:
        return self.evidence.probe_rule

    @property
    def reaction(self) -> str:
        return self.evidence.reaction or self.evidence.title

    def fails(self, fail_on: str = DEFAULT_FAIL_ON) -> bool:
        """Whether this finding turns the exit status to 1: confirmed, and at or above `fail_on`.
        Anything else is an observation: shown, never a failure."""
        return self.confirmed and strength_rank(self.strength) <= strength_rank(fail_on.upper())

    def seen_in(self, prop: str, transport: str) -> bool:
        return any(s.property == prop and s.transport == transport for s in self.sightings.values())

    def to_json(self, fail_on: str = DEFAULT_FAIL_ON) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "rule": self.rule,
            "strength": self.strength,
            "label": self.label,
            "verdict": "failure" if self.fails(fail_on) else "observation",
            "confirmed": self.confirmed,
            "title": self.title,
            "method": self.method,
            "transport": self.transport,
            "mutation": self.mutation,
            "probe": self.probe,
            "probe_rule": self.probe_rule,
            "reaction": self.reaction,
            # one probe: the finding's own file is that probe's smallest reproduction
            "probes": [p.to_json(self.repro if len(self.probes) == 1 else None) for _, p in sorted(self.probes.items())],
            "count": self.count,
            "repro": self.repro,
            "property": self.property,
            "properties": sorted(self.properties),
            "methods": self.methods,
            "transports": self.transports,
            "seen": [s.to_json() for _, s in sorted(self.sightings.items())],
        }
        if self.flaky:
            out["flaky"] = True
        if self.repro_missing:
            out["repro_missing"] = self.repro_missing
        if self.repro_note:
            out["repro_note"] = self.repro_note
        return out


def probe_text(f: Finding) -> str:
    """Every probe that provoked the finding, with the rule its frame breaks and its count."""
    if not f.probes:
        if not f.probe:
            return "-"
        return f.probe + (f" (the frame breaks {f.probe_rule})" if f.probe_rule else "")
    return ", ".join(
        p.probe + (f" (breaks {p.probe_rule})" if p.probe_rule else "") + f" x{p.count}"
        for _, p in sorted(f.probes.items(), key=lambda kv: (-kv[1].count, kv[0])))


def finding_id(rule: str, cause: str) -> str:
    """A stable, file-name-safe id: the same bug gets the same id in every campaign."""
    digest = hashlib.sha1(f"{rule}|{cause}".encode()).hexdigest()
    return f"{_slug(rule)}-{digest[:8]}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "rule"


def strength_rank(strength: str) -> int:
    return _STRENGTH_RANK.get(strength, len(STRENGTHS))


def sort_key(f: Finding, fail_on: str = DEFAULT_FAIL_ON) -> tuple[int, int, str, str]:
    """Failures before observations; then the strongest; then by rule."""
    return (0 if f.fails(fail_on) else 1, strength_rank(f.strength), f.rule, f.id)


def bound_evidence(ev: Evidence) -> str:
    """Cut, in place, what the server said deeper than MAX_WRITTEN_DEPTH out of the evidence's
    parsed messages (their raw text stays whole), and say so; "" when nothing was that deep.
    Why at record time: every reader of a finding (the repro, junit, the HTML report, the
    terminal) encodes those messages with orjson, which refuses anything nested past 254."""
    bounded, parts = cut_deep(ev.transcript, MAX_WRITTEN_DEPTH)
    if not parts:
        return ""
    note = (f"{parts} part(s) of the server's messages nested deeper than {MAX_WRITTEN_DEPTH} levels are "
            "kept as raw text only (their parsed copies were cut)")
    ev.transcript = bounded
    ev._size = None
    ev.note = f"{ev.note}; {note}" if ev.note else note
    return note


def encode_document(doc: Any, *, indent: bool = True) -> tuple[bytes, str]:
    """`doc` as JSON bytes, whatever it holds, and a note of what had to change to write it (empty
    when nothing did). orjson writes nothing nested deeper than 254 and no integer past 64 bits;
    a server's answer can be both (a tools/list whose inputSchema is nested 500 deep). Then the
    parts deeper than MAX_WRITTEN_DEPTH are replaced by empty containers (a transcript keeps the
    raw line of every message, so the evidence is still whole), and what orjson still refuses is
    written by the standard library, unencodable values as their repr."""
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(doc, option=option), ""
    except TypeError:  # orjson.JSONEncodeError: too deep, a huge integer, a lone surrogate, ...
        pass
    kept, parts = cut_deep(doc, MAX_WRITTEN_DEPTH)
    note = (f"{parts} value(s) nested deeper than {MAX_WRITTEN_DEPTH} levels were written as empty ones "
            "(each message's raw text is kept whole)" if parts else "")
    if parts and isinstance(kept, dict):
        kept["written_cut"] = note
    try:
        return orjson.dumps(kept, option=option), note
    except TypeError:
        text = json.dumps(kept, indent=2 if indent else None, default=repr)  # ASCII: lone surrogates escaped
        return text.encode("ascii"), note or "values JSON cannot hold were written as their repr"


def encoded_size(transcript: dict[str, Any]) -> int:
    """The length of `transcript` as `encode_document(transcript, indent=False)` writes it, counted
    an event at a time, and a big raw text counted where it lies: never the document in memory,
    nor an encoded copy of a 12 MB page (the store sizes every failing example's evidence, and
    those copies were the campaign's peak on a 150,000-tool list)."""
    events = transcript.get("events")
    if not isinstance(events, list):
        return len(encode_document(transcript, indent=False)[0])
    total = len(encode_document({**transcript, "events": []}, indent=False)[0]) + max(len(events) - 1, 0)
    return total + sum(_event_size(e) for e in events)


def transcript_size(transcript: Any) -> int:
    """`encoded_size(transcript.to_json())` of a live targets.transcript.Transcript, made an event's
    JSON at a time: what an event writes is decoded once, counted, and let go."""
    head = {**transcript.to_json(events=False), "events": []}
    events = transcript.events
    total = len(encode_document(head, indent=False)[0]) + max(len(events) - 1, 0)
    return total + sum(_event_size(e.to_json()) for e in events)


#: A raw text at least this long is counted in place (`json_string_size`), not encoded.
COUNTED_TEXT: Final = 1 << 16
_SHORT_ESCAPES: Final = ('"', "\\", "\b", "\t", "\n", "\f", "\r")  # written as two characters
_LONG_ESCAPES: Final = re.compile("[\x00-\x07\x0b\x0e-\x1f]")  # written as \u00XX, six


def json_string_size(text: str) -> int:
    """len(orjson.dumps(text)); raises UnicodeEncodeError where orjson refuses it (a lone surrogate)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    size += 2 + sum(text.count(c) for c in _SHORT_ESCAPES)
    return size + 5 * len(_LONG_ESCAPES.findall(text))


def _event_size(event: Any) -> int:
    raw = event.get("raw") if isinstance(event, dict) else None
    if isinstance(raw, str) and len(raw) >= COUNTED_TEXT:
        rest = {k: v for k, v in event.items() if k != "raw"}
        try:
            text = json_string_size(raw)
        except UnicodeEncodeError:
            pass
        else:  # `{...,"raw":"..."}`: the rest, the key, the text, and a comma when the rest is not empty
            return len(encode_document(rest, indent=False)[0]) + len('"raw":') + text + (1 if rest else 0)
    return len(encode_document(event, indent=False)[0])


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:  # a full disk must leave the old file and no .tmp behind
        tmp.unlink(missing_ok=True)
        raise


@dataclass(slots=True)
class ReplayConditions:
    """Everything besides the case that a verdict depended on, recorded so a replay judges the
    same way: the per-answer and start-up timeouts, the working directory (a command such as
    `python tests/servers/x.py` means something only there), each target's resolved command, and
    the era policy and surface the campaign judged by (keyed by target text)."""

    timeout: float = 5.0
    start_timeout: float = 5.0
    cwd: str = field(default_factory=os.getcwd)
    commands: dict[str, list[str]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_target(self, target: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timeouts": {"answer": self.timeout, "start": self.start_timeout},
            "cwd": self.cwd,
            "command": self.commands.get(target),
        }
        if target in self.contexts:
            out["context"] = self.contexts[target]
        return out


def resolved_command(argv: list[str] | tuple[str, ...], cwd: str | None = None) -> list[str]:
    """The command as it was started: the program found on PATH (or in `cwd`), the rest as given."""
    if not argv:
        return []
    program = argv[0]
    found = shutil.which(program) if os.sep not in program else None
    if found is None and cwd is not None and os.sep in program:
        found = os.path.abspath(os.path.join(cwd, program))  # abspath: a venv's python link stays a link
    return [found or program, *argv[1:]]


def repro_document(finding: Finding, *, target: str, seed: int | None,
                   conditions: ReplayConditions | None = None) -> dict[str, Any]:
    """The replay file: everything `mcp-tempest replay` and a regression test need, nothing else."""
    ev = finding.evidence
    doc: dict[str, Any] = {
        "format": REPRO_FORMAT,
        "id": finding.id,
        "target": ev.target or target,
        "revision": MODERN_VERSION,
        "seed": seed,
        "property": ev.property,
        "transport": ev.transport,
        "rule": finding.rule,
        "strength": finding.strength,
        "label": finding.label,
        "title": finding.title,
        "method": finding.method,
        "mutation": finding.mutation,
        "probe": finding.probe,
        "probe_rule": finding.probe_rule,
        "reaction": finding.reaction,
        "probes": sorted(finding.probes),
        "methods": finding.methods,
        "transports": finding.transports,
        "reproduce_blob": ev.reproduce_blob,
        "hypothesis_version": ev.hypothesis_version,
        "reproduce_decorator": (
            f"@reproduce_failure({ev.hypothesis_version!r}, {ev.reproduce_blob.encode()!r})"
            if ev.reproduce_blob and ev.hypothesis_version
            else None
        ),
        "confirmed": ev.confirmed,
    }
    if conditions is not None:
        doc.update(conditions.for_target(ev.target or target))
    doc.update({"violations": ev.violations, "case": ev.case, "transcript": ev.transcript})
    if ev.note:
        doc["note"] = ev.note
    return doc


class FindingStore:
    """The campaign's findings, mirrored to disk on every change. Thread-safe; one per campaign."""

    def __init__(self, out_dir: Path, *, target: str, seed: int | None,
                 conditions: ReplayConditions | None = None, fail_on: str = DEFAULT_FAIL_ON) -> None:
        self.out_dir = out_dir
        self.target = target
        self.seed = seed
        self.conditions = conditions
        self.fail_on = fail_on
        self.examples = 0
        self.interrupted = False
        self.extra: dict[str, Any] = {}  # campaign-level sections of findings.json (coverage, budget, known)
        self._findings: dict[tuple[str, str], Finding] = {}
        self._lock = threading.Lock()
        # The first failed write (a full disk): the campaign goes on, what is on disk stays valid
        # (every write is atomic), and the command ends with this as its one line and exit 2.
        self.write_error = ""
        (out_dir / "repro").mkdir(parents=True, exist_ok=True)
        self.write_index()

    @property
    def findings(self) -> list[Finding]:
        """Every finding, failures first (see `sort_key`)."""
        with self._lock:
            return sorted(self._findings.values(), key=lambda f: sort_key(f, self.fail_on))

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.fails(self.fail_on)]

    @property
    def observations(self) -> list[Finding]:
        return [f for f in self.findings if not f.fails(self.fail_on)]

    def add_examples(self, n: int) -> None:
        with self._lock:
            self.examples += n

    def record(self, ev: Evidence) -> tuple[Finding, bool]:
        """Count one failing execution; returns the finding and whether it is new.

        The evidence replaces the stored one when it is smaller, which is how Hypothesis'
        shrinking reaches the file: every accepted shrink step is a smaller failing execution.
        """
        key = ev.group_key()
        with self._lock:
            found = self._findings.get(key)
            is_new = found is None
            if is_new or self._takes(found, ev):  # type: ignore[arg-type]
                ev.materialize()
            else:
                ev.source = None  # counted, not kept: its transcript is never made
            cut_note = bound_evidence(ev)
            if found is None:
                fid = finding_id(*key)
                found = Finding(
                    id=fid, rule=ev.rule, strength=ev.strength, title=ev.reaction or ev.title, method=ev.method,
                    transport=ev.transport, mutation=ev.mutation, count=0,
                    repro=f"repro/{fid}.json", property=ev.property, properties=[ev.property],
                    evidence=ev,
                )
                self._findings[key] = found
                rewrite = True
            else:
                rewrite = ev.size() <= found.evidence.size()
                if ev.property not in found.properties:
                    found.properties.append(ev.property)
                if strength_rank(ev.strength) < strength_rank(found.strength):
                    found.strength = ev.strength
            sighting = found.sightings.get(ev.member_key())
            if sighting is None:
                sighting = found.sightings[ev.member_key()] = Sighting(
                    ev.method, ev.transport, ev.mutation, ev.property, ev.strength, ev.title)
            sighting.count += 1
            sighting.confirmed = sighting.confirmed or ev.confirmed
            if strength_rank(ev.strength) < strength_rank(sighting.strength):
                sighting.strength = ev.strength
            found.count += 1
            if rewrite:
                found.evidence = ev
                found.title = ev.reaction or ev.title
                found.property = ev.property
                found.method = ev.method
                found.transport = ev.transport
                found.mutation = ev.mutation
                self._write_repro(found)
                found.repro_note = found.repro_note or cut_note
            if ev.probe_name:
                self._record_probe(found, ev)
            self._write_index_locked()
            return found, is_new

    @staticmethod
    def _takes(found: Finding, ev: Evidence) -> bool:
        """Whether `record` keeps `ev` as the finding's evidence or as its probe's (the same tests
        as there: no larger than the one kept)."""
        if ev.size() <= found.evidence.size():
            return True
        rec = found.probes.get(ev.probe_name or "") if ev.probe_name else None
        return bool(ev.probe_name) and (rec is None or ev.size() <= rec.evidence.size())

    def _record_probe(self, found: Finding, ev: Evidence) -> None:
        name = ev.probe_name or ""
        rec = found.probes.get(name)
        if rec is None:
            rec = found.probes[name] = ProbeRecord(name, ev.probe_rule, ev, f"repro/{found.id}.{_slug(name)}.json")
        elif ev.size() > rec.evidence.size():
            rec.count += 1
            return
        rec.count += 1
        rec.evidence = ev
        if len(found.probes) > 1:  # with one probe, the finding's own file is that probe's
            for other in found.probes.values():
                self._write_probe_repro(found, other, only=other is rec)

    def _write_probe_repro(self, found: Finding, rec: ProbeRecord, *, only: bool = True) -> None:
        """Never raises, like `_write_repro`: a failure is kept as the probe's `missing`."""
        path = self.out_dir / rec.repro
        if not only and path.exists():
            return
        rec.missing, _ = self._write_document(path, lambda: self._probe_document(found, rec))

    def _probe_document(self, found: Finding, rec: ProbeRecord) -> dict[str, Any]:
        kept = found.evidence
        try:
            found.evidence = rec.evidence
            doc = repro_document(found, target=self.target, seed=self.seed, conditions=self.conditions)
        finally:
            found.evidence = kept
        ev = rec.evidence
        doc.update(probe=rec.probe, probe_rule=rec.probe_rule, title=ev.title, method=ev.method,
                   mutation=ev.mutation, transport=ev.transport, property=ev.property)
        return doc

    def mark_flaky(self, finding_id: str) -> None:
        with self._lock:
            for f in self._findings.values():
                if f.id == finding_id:
                    f.flaky = True
            self._write_index_locked()

    def write_index(self) -> None:
        with self._lock:
            self._write_index_locked()

    def index_document(self) -> dict[str, Any]:
        ordered = sorted(self._findings.values(), key=lambda f: sort_key(f, self.fail_on))
        return {
            "target": self.target,
            "revision": MODERN_VERSION,
            "seed": self.seed,
            "examples": self.examples,
            "interrupted": self.interrupted,
            "fail_on": self.fail_on,
            "failures": sum(1 for f in ordered if f.fails(self.fail_on)),
            "observations": sum(1 for f in ordered if not f.fails(self.fail_on)),
            "findings": [f.to_json(self.fail_on) for f in ordered],
            **({"bounded": bounded} if (bounded := self.bounded()) else {}),
            **self.extra,
        }

    def bounded(self) -> dict[str, Any]:
        """Per target, what the campaign left out of what the server offered, from the surface it
        judged by (fuzz.properties.surface.bound_surface): lists sampled ("listed" against
        "exercised") and tool schemas cut at MAX_SCHEMA_DEPTH (whose, how deep, where)."""
        out: dict[str, Any] = {}
        for target, context in (self.conditions.contexts if self.conditions else {}).items():
            surface = context.get("surface") if isinstance(context, dict) else None
            if not isinstance(surface, dict) or not (surface.get("listed") or surface.get("cuts")):
                continue
            fields = {"tools": "tools", "resources": "resources", "resource templates": "templates",
                      "prompts": "prompts"}
            out[target] = {
                "lists": {label: {"listed": n, "exercised": len(surface.get(fields.get(label, label)) or [])}
                          for label, n in (surface.get("listed") or {}).items()},
                "schema_cuts": list(surface.get("cuts") or []),
            }
        return out

    def _write_index_locked(self) -> None:
        missing, _ = self._write_document(self.out_dir / "findings.json", self.index_document)
        if missing:
            self.write_error = self.write_error or missing

    def _write_repro(self, finding: Finding) -> None:
        """Never raises: a repro that cannot be made or written leaves the finding in the index
        with `repro_missing` saying why, and the campaign goes on."""
        finding.repro_missing, finding.repro_note = self._write_document(
            self.out_dir / finding.repro,
            lambda: repro_document(finding, target=self.target, seed=self.seed, conditions=self.conditions))

    def _write_document(self, path: Path, build: Callable[[], Any]) -> tuple[str, str]:
        """Build and write one JSON document; returns (why it is missing, what was left out of it),
        both empty when it was written whole. Nothing raised while building, encoding or writing
        it escapes (a finding is worth more than its file); an interrupt still does."""
        try:
            data, note = encode_document(build())
        except Exception as exc:  # noqa: BLE001 - any failure to make the file is reported, not raised
            return f"the repro could not be made: {type(exc).__name__}: {exc}"[:300], ""
        try:
            atomic_write(path, data)
        except OSError as exc:
            reason = f"cannot write {path}: {exc.strerror or exc}"
            self.write_error = self.write_error or reason
            return reason, ""
        return "", note



def load_repro(path: Path) -> dict[str, Any]:
    """Read a replay file (gzip-compressed when its name ends in .gz: a finding about an 11 MiB
    frame is a 40 MB file, mostly one repeated byte); raises ValueError with a one-line reason
    when it is not one."""
    try:
        raw = read_bounded(path)  # size-capped, and so is what a .gz inflates to
        data = orjson.loads(raw)
    except OSError as exc:  # gzip.BadGzipFile and EOFError are OSError / below
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except EOFError:
        raise ValueError(f"{path} is a truncated gzip file") from None
    except orjson.JSONDecodeError:
        raise ValueError(f"{path} is not JSON") from None
    return validate.repro_document(data, str(path))  # mistyped fields: one line, not a traceback later


@dataclass(slots=True)
class PropertyRun:
    """What one property did over one transport: the unit of junit.xml's test cases."""

    property: str
    transport: str
    examples: int = 0  # examples generated (coverage and random): what --max-examples caps
    seconds: float = 0.0
    note: str = ""  # why it stopped early or was skipped, when it did
    skipped: bool = False
    error: str = ""  # the harness itself failed (not the server): shown, never a finding
    shrinks: int = 0  # executions spent shrinking and confirming failures (--shrink-time), and playing
    # the probes of a failing coverage batch alone (bounded by the campaign's time instead)
    replays: int = 0  # failures from the example database played again (reported as known)
    reach: dict[str, Any] | None = None  # fuzz.reach.Reach as JSON: how its tools/call steps were answered

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "property": self.property, "transport": self.transport, "examples": self.examples,
            "seconds": round(self.seconds, 3),
        }
        if self.note:
            out["note"] = self.note
        if self.skipped:
            out["skipped"] = True
        if self.error:
            out["error"] = self.error
        if self.shrinks:
            out["shrinks"] = self.shrinks
        if self.replays:
            out["replays"] = self.replays
        if self.reach and self.reach.get("tools"):
            out["reach"] = self.reach
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PropertyRun:
        return cls(
            property=data["property"], transport=data["transport"], examples=int(data.get("examples", 0)),
            seconds=float(data.get("seconds", 0.0)), note=data.get("note", ""),
            skipped=bool(data.get("skipped", False)), error=data.get("error", ""),
            shrinks=int(data.get("shrinks", 0)), replays=int(data.get("replays", 0)), reach=data.get("reach"),
        )
