"""Findings: violations bucketed into the few distinct bugs a person has to read about.

A campaign sees the same bug many times (every example that trips it, every shrink step), so
violations are grouped by what makes two of them the same bug for the person fixing it: the
rule broken, the method involved, the mutation that provoked it and the transport. Each bucket
keeps one piece of evidence, the smallest seen so far, and it is on disk as soon as the bucket
exists: a campaign killed a second later still leaves a replayable file behind.

Files written under the campaign's out directory (the format is a promise, see CLI.md):
  findings.json       the index, rewritten atomically after every change
  repro/<id>.json     one reproduction per finding: target, seed, Hypothesis blob, the case
                      (frames with their process boundaries) and the transcript
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from targets.wire import MODERN_VERSION

REPRO_FORMAT = "mcp-gauntlet/repro-1"
STRENGTHS = ("MUST", "SHOULD", "HEURISTIC")
_STRENGTH_RANK = {name: i for i, name in enumerate(STRENGTHS)}


@dataclass(slots=True)
class Evidence:
    """One failing execution, as the runner saw it: what broke and the whole exchange."""

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

    def bucket(self) -> tuple[str, str, str, str]:
        return (self.rule, self.method or "", self.mutation or "", self.transport)

    def size(self) -> tuple[int, int, int]:
        """How good the reproduction is, smaller first: confirmed before unconfirmed, then frames
        sent, then bytes."""
        events = self.transcript.get("events", [])
        sent = sum(1 for e in events if e.get("kind") == "send")
        return (0 if self.confirmed else 1), sent, len(orjson.dumps(self.transcript))


@dataclass(slots=True)
class Finding:
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "rule": self.rule,
            "strength": self.strength,
            "title": self.title,
            "method": self.method,
            "transport": self.transport,
            "mutation": self.mutation,
            "count": self.count,
            "repro": self.repro,
            "property": self.property,
            "properties": sorted(self.properties),
        }
        if self.flaky:
            out["flaky"] = True
        return out


def finding_id(rule: str, method: str | None, mutation: str | None, transport: str) -> str:
    """A stable, file-name-safe id: the same bug gets the same id in every campaign."""
    digest = hashlib.sha1(f"{rule}|{method or ''}|{mutation or ''}|{transport}".encode()).hexdigest()
    return f"{_slug(rule)}-{transport}-{digest[:6]}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "rule"


def strength_rank(strength: str) -> int:
    return _STRENGTH_RANK.get(strength, len(STRENGTHS))


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def repro_document(finding: Finding, *, target: str, seed: int | None) -> dict[str, Any]:
    """The replay file: everything `mcp-gauntlet replay` and a regression test need, nothing else."""
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
        "title": finding.title,
        "method": finding.method,
        "mutation": finding.mutation,
        "reproduce_blob": ev.reproduce_blob,
        "hypothesis_version": ev.hypothesis_version,
        "reproduce_decorator": (
            f"@reproduce_failure({ev.hypothesis_version!r}, {ev.reproduce_blob.encode()!r})"
            if ev.reproduce_blob and ev.hypothesis_version
            else None
        ),
        "confirmed": ev.confirmed,
        "violations": ev.violations,
        "case": ev.case,
        "transcript": ev.transcript,
    }
    if ev.note:
        doc["note"] = ev.note
    return doc


class FindingStore:
    """The campaign's findings, mirrored to disk on every change. Thread-safe; one per campaign."""

    def __init__(self, out_dir: Path, *, target: str, seed: int | None) -> None:
        self.out_dir = out_dir
        self.target = target
        self.seed = seed
        self.examples = 0
        self.interrupted = False
        self.extra: dict[str, Any] = {}  # campaign-level sections of findings.json (coverage, budget, known)
        self._findings: dict[tuple[str, str, str, str], Finding] = {}
        self._lock = threading.Lock()
        (out_dir / "repro").mkdir(parents=True, exist_ok=True)
        self.write_index()

    @property
    def findings(self) -> list[Finding]:
        with self._lock:
            return sorted(
                self._findings.values(), key=lambda f: (strength_rank(f.strength), f.rule, f.id)
            )

    def add_examples(self, n: int) -> None:
        with self._lock:
            self.examples += n

    def record(self, ev: Evidence) -> tuple[Finding, bool]:
        """Count one failing execution; returns the finding and whether it is new.

        The evidence replaces the stored one when it is smaller, which is how Hypothesis'
        shrinking reaches the file: every accepted shrink step is a smaller failing execution.
        """
        key = ev.bucket()
        with self._lock:
            found = self._findings.get(key)
            is_new = found is None
            if found is None:
                fid = finding_id(ev.rule, ev.method, ev.mutation, ev.transport)
                found = Finding(
                    id=fid, rule=ev.rule, strength=ev.strength, title=ev.title, method=ev.method,
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
            found.count += 1
            if rewrite:
                found.evidence = ev
                found.title = ev.title
                found.property = ev.property
                self._write_repro(found)
            self._write_index_locked()
            return found, is_new

    def mark_flaky(self, key: tuple[str, str, str, str]) -> None:
        with self._lock:
            if key in self._findings:
                self._findings[key].flaky = True
                self._write_index_locked()

    def write_index(self) -> None:
        with self._lock:
            self._write_index_locked()

    def index_document(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "revision": MODERN_VERSION,
            "seed": self.seed,
            "examples": self.examples,
            "interrupted": self.interrupted,
            "findings": [f.to_json() for f in sorted(
                self._findings.values(), key=lambda f: (strength_rank(f.strength), f.rule, f.id)
            )],
            **self.extra,
        }

    def _write_index_locked(self) -> None:
        atomic_write(
            self.out_dir / "findings.json", orjson.dumps(self.index_document(), option=orjson.OPT_INDENT_2)
        )

    def _write_repro(self, finding: Finding) -> None:
        doc = repro_document(finding, target=self.target, seed=self.seed)
        atomic_write(self.out_dir / finding.repro, orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def load_repro(path: Path) -> dict[str, Any]:
    """Read a replay file (gzip-compressed when its name ends in .gz: a finding about an 11 MiB
    frame is a 40 MB file, mostly one repeated byte); raises ValueError with a one-line reason
    when it is not one."""
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        data = orjson.loads(raw)
    except OSError as exc:  # gzip.BadGzipFile and EOFError are OSError / below
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except EOFError:
        raise ValueError(f"{path} is a truncated gzip file") from None
    except orjson.JSONDecodeError:
        raise ValueError(f"{path} is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("transcript"), dict):
        raise ValueError(f"{path} is not an mcp-gauntlet reproduction file (no transcript)")
    return data


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
    shrinks: int = 0  # executions spent shrinking and confirming failures (bounded by --shrink-time)
    replays: int = 0  # failures from the example database played again (reported as known)

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
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PropertyRun:
        return cls(
            property=data["property"], transport=data["transport"], examples=int(data.get("examples", 0)),
            seconds=float(data.get("seconds", 0.0)), note=data.get("note", ""),
            skipped=bool(data.get("skipped", False)), error=data.get("error", ""),
            shrinks=int(data.get("shrinks", 0)), replays=int(data.get("replays", 0)),
        )
