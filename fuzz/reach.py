"""Reach: how far into the server's own tools a campaign got, per tool.

Why: a campaign that reports "0 findings" after every tools/call was refused at the tool's
argument check ("Path ... is outside the repository") tested the protocol layer and none of the
server's own code, and the user cannot tell. So every valid tools/call played (the coverage
phase, generation, shrinking, replays alike) is tallied by tool and by how it was answered, and
the reports say which tools never did their job and what they answered instead.

Only calls whose frame is valid count (a step with no mutation): a malformed tools/call earns a
protocol error by design and says nothing about the tool. A call to a name the server did not
list is an unknown-tool probe, counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.terminal_style import COLUMNS, cell, fit

#: The tool-name column of the terminal's per-tool table.
NAME_COLUMN = 28
#: How many of a tool's most frequent isError / protocol error texts are kept, and how long each.
TOP_TEXTS = 3
TEXT_WIDTH = 120
#: Distinct texts counted per tool before the rest are folded into the counts only.
MAX_DISTINCT_TEXTS = 200


def shorten(text: str, width: int = TEXT_WIDTH) -> str:
    """One line of at most `width` characters: texts go to a terminal and into reports."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


@dataclass(slots=True)
class ToolReach:
    """How one tool's valid calls were answered."""

    name: str
    calls: int = 0
    ok: int = 0  # a complete result without isError: the tool did its job
    is_error: int = 0  # an isError result: the tool ran and refused or failed
    protocol_error: int = 0  # a JSON-RPC error (or an HTTP error with none)
    input_required: int = 0  # MRTR: the server asked for more input (the retry is another call)
    unanswered: int = 0  # no answer: the process died or the deadline passed
    texts: Counter[str] = field(default_factory=Counter)  # isError and protocol-error texts
    first_ok_source: str = ""  # which argument source gave the values of the first success

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "calls": self.calls, "ok": self.ok, "is_error": self.is_error,
                               "protocol_error": self.protocol_error, "input_required": self.input_required,
                               "unanswered": self.unanswered}
        if self.texts:
            out["answers"] = [{"text": t, "count": n} for t, n in self.texts.most_common(TOP_TEXTS)]
        if self.first_ok_source:
            out["first_ok_source"] = self.first_ok_source
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolReach:
        out = cls(str(data["name"]), *(int(data.get(k, 0)) for k in (
            "calls", "ok", "is_error", "protocol_error", "input_required", "unanswered")))
        out.texts.update({a["text"]: int(a["count"]) for a in data.get("answers", [])})
        out.first_ok_source = str(data.get("first_ok_source", ""))
        return out

    def merge(self, other: ToolReach) -> None:
        self.calls += other.calls
        self.ok += other.ok
        self.is_error += other.is_error
        self.protocol_error += other.protocol_error
        self.input_required += other.input_required
        self.unanswered += other.unanswered
        for text, n in other.texts.items():
            self._note(text, n)
        if other.first_ok_source and not self.first_ok_source:
            self.first_ok_source = other.first_ok_source

    def _note(self, text: str, n: int = 1) -> None:
        if text in self.texts or len(self.texts) < MAX_DISTINCT_TEXTS:
            self.texts[text] += n

    @property
    def common_answer(self) -> str:
        return self.texts.most_common(1)[0][0] if self.texts else ""


def _result_text(result: dict[str, Any]) -> str:
    for block in result.get("content") or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].strip():
            return shorten(block["text"])
    return "(no text)"


def _error_text(error: dict[str, Any]) -> str:
    return shorten(f"{error.get('code')} {error.get('message', '')}".strip())


@dataclass(slots=True)
class Reach:
    """The whole campaign's tally (one per job, merged across jobs and worker processes)."""

    tools: dict[str, ToolReach] = field(default_factory=dict)
    unknown_calls: int = 0  # calls to names the server did not list (probes of TOOL-09)

    def tool(self, name: str) -> ToolReach:
        found = self.tools.get(name)
        if found is None:
            found = self.tools[name] = ToolReach(name)
        return found

    def add_run(self, run: Any, listed: frozenset[str], attribute: Any = None) -> None:
        """Tally the valid tools/call steps of one played case (`run`: executor.Run).
        `attribute(arguments) -> source name`, when given, names where a first success's values came from."""
        for i, step in enumerate(run.case.steps):
            if (step.mutation is not None or step.method != "tools/call" or i not in run.sends
                    or step.wait != "response"):
                continue
            frame = run.frames.get(i, step.frame)
            params = frame.get("params") if isinstance(frame, dict) else None
            name = params.get("name") if isinstance(params, dict) else None
            if not isinstance(name, str):
                continue
            args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
            self.add_answer(name, args, run.responses.get(i), listed, status=run.status(i), attribute=attribute)

    def add_answer(self, name: str, arguments: dict[str, Any], message: Any, listed: frozenset[str], *,
                   status: int | None = None, attribute: Any = None) -> None:
        """Tally one valid tools/call by its answer (None: none came; `status`: the HTTP one)."""
        if name not in listed:
            self.unknown_calls += 1
            return
        tally = self.tool(name)
        tally.calls += 1
        if not isinstance(message, dict):
            if status is not None and status >= 400:
                tally.protocol_error += 1
                tally._note(f"HTTP {status}")
            else:
                tally.unanswered += 1
            return
        if isinstance(message.get("error"), dict):
            tally.protocol_error += 1
            tally._note(_error_text(message["error"]))
            return
        result = message.get("result")
        if not isinstance(result, dict):
            return
        if result.get("resultType") == "input_required":
            tally.input_required += 1
        elif result.get("isError") is True:
            tally.is_error += 1
            tally._note(_result_text(result))
        else:
            tally.ok += 1
            if not tally.first_ok_source and attribute is not None:
                tally.first_ok_source = attribute(name, arguments)

    def merge(self, other: Reach) -> None:
        for name, tally in other.tools.items():
            self.tool(name).merge(tally)
        self.unknown_calls += other.unknown_calls

    def to_json(self) -> dict[str, Any]:
        return {"tools": [self.tools[n].to_json() for n in sorted(self.tools)], "unknown_tool_calls": self.unknown_calls}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Reach:
        out = cls()
        for item in (data or {}).get("tools", []):
            tally = ToolReach.from_json(item)
            out.tools[tally.name] = tally
        out.unknown_calls = int((data or {}).get("unknown_tool_calls", 0))
        return out


@dataclass(slots=True)
class ToolsReport:
    """Reach set against what the server listed and what the policy withheld: what the reports show."""

    reach: Reach
    listed: list[str]  # every tool the server listed (policy-withheld ones included)
    withheld: list[str]
    unread: str = ""  # why tools/list could not be read, when no tool was learned from it

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for name in self.listed:
            tally = self.reach.tools.get(name)
            row = tally.to_json() if tally else ToolReach(name).to_json()
            if name in self.withheld:
                row["never_called"] = "withheld by the tool policy"
            elif not tally or not tally.calls:
                row["never_called"] = "no call generated"
            out.append(row)
        return out

    def never_ok(self) -> list[str]:
        return [n for n in self.listed if n not in self.withheld
                and not (self.reach.tools.get(n) and self.reach.tools[n].ok)]

    def to_json(self) -> dict[str, Any]:
        return {"tools": self.rows(), "listed": len(self.listed), "withheld": list(self.withheld),
                "never_ok": self.never_ok(), "unknown_tool_calls": self.reach.unknown_calls}

    def headline(self) -> str:
        """One line: how many tools did their job, and what the others answered most."""
        callable_ = [n for n in self.listed if n not in self.withheld]
        if not self.listed:
            return (f"reach: no tool to call: {visible(self.unread)}" if self.unread
                    else "reach: the server lists no tools")
        if not callable_:
            return f"reach: all {len(self.listed)} tools withheld by the tool policy, none called"
        never = self.never_ok()
        if not never:
            return f"reach: all {len(callable_)} tools returned a successful result"
        answers: Counter[str] = Counter()
        for name in never:
            tally = self.reach.tools.get(name)
            if tally:
                answers.update(tally.texts)
        names = (", ".join(visible(n, 28) for n in never[:8])
                 + (f" and {len(never) - 8} more" if len(never) > 8 else ""))
        common = f" (most common answer: {shorten(answers.most_common(1)[0][0], 80)!r})" if answers else ""
        return (f"reach: {len(never)} of {len(callable_)} tools never returned a successful result: "
                f"{names}{common}")

    def lines(self) -> list[str]:
        """The terminal's per-tool table, least reached first."""
        rows = sorted(self.rows(), key=lambda r: (r["ok"] > 0, r["ok"], r["name"]))
        head = f"  {'tool':<{NAME_COLUMN}} {'calls':>6} {'ok':>6} {'isError':>7} {'error':>6} {'silent':>6}  "
        room = COLUMNS - len(head)  # the answer's column: the rest of the line (the headline quotes more)
        out = [head + "most common answer"]
        for r in rows:
            tally = self.reach.tools.get(r["name"])
            answer = r.get("never_called") or (shorten(tally.common_answer) if tally and not r["ok"] else "")
            # the server wrote both: every hidden character escaped (a name keeps its \r\n visible),
            # each cut to its column by display width
            out.append(f"  {cell(visible(r['name'], NAME_COLUMN), NAME_COLUMN)} {r['calls']:>6} {r['ok']:>6} "
                       f"{r['is_error']:>7} {r['protocol_error']:>6} {r['unanswered']:>6}  "
                       f"{fit(visible(answer, room), room)}")
        return out


def merged(reaches: Iterable[Reach]) -> Reach:
    out = Reach()
    for r in reaches:
        out.merge(r)
    return out
