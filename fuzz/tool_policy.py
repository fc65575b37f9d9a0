"""Which of a real server's tools a campaign may call: `--tools`, `--allow-tool`, `--deny-tool`.

Why: a fuzzer calls tools with arbitrary arguments, and a real server's tools send mail, delete
rows, spend money. The policy is applied when the target's surface is learned, so a withheld
tool is never called at all (not even to find out whether it answers input_required), and the
properties that need a tool call say so instead of passing.

`read-only` trusts the tools' own annotations: a tool is read-only when it says
`readOnlyHint: true` and does not say `destructiveHint: true` (MCP's defaults are
readOnlyHint false, destructiveHint true, so an unannotated tool is withheld).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Literal

ToolMode = Literal["all", "read-only", "none"]
TOOL_MODES: tuple[ToolMode, ...] = ("all", "read-only", "none")


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    mode: ToolMode = "all"
    allow: tuple[str, ...] = ()  # name globs; when given, only matching tools may be called
    deny: tuple[str, ...] = ()  # name globs never called, whatever else says

    def allows(self, tool: dict[str, Any]) -> bool:
        name = tool.get("name")
        if not isinstance(name, str):
            return False
        if any(fnmatch.fnmatchcase(name, p) for p in self.deny):
            return False
        if self.allow and not any(fnmatch.fnmatchcase(name, p) for p in self.allow):
            return False
        if self.mode == "none":
            return False
        if self.mode == "read-only":
            notes = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
            return notes.get("readOnlyHint") is True and notes.get("destructiveHint") is not True
        return True

    @property
    def unrestricted(self) -> bool:
        return self.mode == "all" and not self.allow and not self.deny

    def describe(self) -> str:
        parts = [f"--tools {self.mode}"]
        parts += [f"--allow-tool {p}" for p in self.allow]
        parts += [f"--deny-tool {p}" for p in self.deny]
        return " ".join(parts)
