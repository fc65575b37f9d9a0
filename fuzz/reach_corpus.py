"""The reach corpus: examples that drew an answer no earlier example drew, kept for the next run.

Why: a nightly campaign that starts from zero every night spends its first minutes finding again
the calls that get past a tool's argument check. An example whose run got a new kind of answer
(a tool's first success, a new error, a new refusal text) is saved in the example database
under a key of its own, and the next run that shares the database plays those first, before it
generates: it starts where the last one got to, and its budget goes to what lies beyond.

The per-example signal is the kind of answer, not code lines: coverage.py writes a server
process's lines when the process exits, and a warm process serves many examples, so lines
cannot be told apart per example. An answer's kind can: per tool (or method), whether it
succeeded, was an isError result or a JSON-RPC error (with its code), and the shape of its text
with numbers and quoted values blanked, so "Path 'a' is outside" and "Path 'b' is outside" are
one kind and "Invalid branch type" another.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

KEY_PREFIX = b"mcp-tempest/reach-corpus:"
MAX_REPLAYED = 64  # corpus entries a job plays before generating
MAX_SAVED = 256  # entries a job adds at the most (a server that answers every call differently)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NUMBER = re.compile(r"\d+")


def corpus_key(prop: str, transport: str, target: str) -> bytes:
    return KEY_PREFIX + hashlib.sha256(f"{prop}|{transport}|{target}".encode()).hexdigest()[:32].encode()


def _shape(text: str) -> str:
    return _NUMBER.sub("0", _QUOTED.sub("''", " ".join(text.split())))[:60]


def answer_kinds(run: Any) -> set[str]:
    """The kinds of answer a played case drew: one per valid request step that was answered."""
    kinds: set[str] = set()
    for i, step in enumerate(run.case.steps):
        method = step.method
        if step.mutation is not None or method is None or i not in run.sends:
            continue
        frame = run.frames.get(i, step.frame)
        params = frame.get("params") if isinstance(frame, dict) else None
        name = params.get("name") if isinstance(params, dict) and method in ("tools/call", "prompts/get") else None
        where = f"{method}:{name}" if isinstance(name, str) else method
        message = run.responses.get(i)
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("error"), dict):
            error = message["error"]
            kinds.add(f"{where}|error {error.get('code')}|{_shape(str(error.get('message', '')))}")
            continue
        result = message.get("result")
        if not isinstance(result, dict):
            continue
        if result.get("isError") is True:
            text = next((b.get("text", "") for b in result.get("content") or []
                         if isinstance(b, dict) and isinstance(b.get("text"), str)), "")
            kinds.add(f"{where}|isError|{_shape(text)}")
        else:
            kinds.add(f"{where}|{result.get('resultType', 'result')}")
    return kinds


class ReachCorpus:
    """One job's view: what kinds of answer it has seen, and the entries it saved or played."""

    def __init__(self, database: Any, key: bytes) -> None:
        self.database = database
        self.key = key
        self.seen: set[str] = set()
        self.saved = 0
        self.replayed = 0
        self.last_new = 0  # how many new kinds the latest played case drew

    def observe(self, run: Any) -> int:
        kinds = answer_kinds(run)
        new = kinds - self.seen
        self.seen |= new
        self.last_new = len(new)
        return self.last_new

    def entries(self) -> list[bytes]:
        if self.database is None:
            return []
        try:
            return sorted(self.database.fetch(self.key))[:MAX_REPLAYED]
        except Exception:  # noqa: BLE001 - an unreachable database: the run generates from zero
            return []

    def save(self, blob: bytes) -> None:
        if self.database is None or self.saved >= MAX_SAVED:
            return
        try:
            self.database.save(self.key, blob)
            self.saved += 1
        except Exception:  # noqa: BLE001 - a corpus entry is a head start, never worth a failed run
            pass

    def drop(self, blob: bytes) -> None:
        if self.database is not None:
            try:
                self.database.delete(self.key, blob)
            except Exception:  # noqa: BLE001
                pass
