"""The workspace mutants: bugs only the surface search's argument pools lead a campaign to.

Each lives in a tool the reference serves only with `--workspace DIR` (so the default catalogue,
README's table and its token counts do not move) and fails past the tool's own refusals, on a value
no inputSchema names: a path inside the folder the server was started on (the command line), a
calendarId open_calendar returned (a value flow), a query of exactly maxLength characters (a schema
boundary), a word the server's source compares against (a source literal). The failure ends the
process (RPC-01): a -32603 would be judged as TOOL-10 only in a transcript that also listed every
page of the tools, which the generated examples seldom do.

Per mutant: a direct probe shows the deviation and the reference's absence of it (merged into
tests/test_mutants_behaviour.py's CHECKS); a short campaign finds it under its listed rule and its
reproduction replays (exit 1 on the mutant, 0 on the reference); and where it is cheap, the same
campaign without the pool's value finds nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import PYTHON, processes_mentioning
from reference_support import StdioServer, req

from mcp_tempest.fuzz.cli import main as cli_main
from mcp_tempest.targets.mutants import MUTANTS, found_by
from mcp_tempest.targets.reference.catalog import SEARCH_QUERY_MAX

NOTE = "agenda-2026.md"


def workspace(root: Path) -> Path:
    folder = root / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NOTE).write_text("# Agenda 2026\n\n- kickoff\n", encoding="utf-8")
    return folder


def target(db: Path, folder: str, *bugs: str) -> str:
    # --workspace first: for a path argument the minimal call takes the first command-line value,
    # and after `--transport stdio` that would be "stdio"
    argv = [PYTHON, "-m", "mcp_tempest.targets.reference", "--workspace", folder, "--transport", "stdio",
            "--db", str(db)]
    for bug in bugs:
        argv += ["--bug", bug]
    return "stdio:" + shlex.join(argv)


# --- direct probes: True when the deviation is seen (the process ends without answering) ---------


def _answered(db: Path, bugs: tuple[str, ...], calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether the last call is answered, the earlier ones (setup) answered without isError."""
    folder = workspace(db.parent / (db.stem + "-ws"))
    with StdioServer(db, *bugs, extra=("--workspace", str(folder)), validate=False) as s:
        results = []
        for n, (name, args) in enumerate(calls, 1):
            args = {k: (v(folder, results) if callable(v) else v) for k, v in args.items()}
            s.send(req(n, "tools/call", {"name": name, "arguments": args}))
            got = s.recv(10.0)
            if got is None:
                return False
            results.append(got.get("result", {}))
        return True


def read_note_mtime_ns(db: Path, bugs: tuple[str, ...]) -> bool:
    return not _answered(db, bugs, [("read_note", {"path": lambda f, _: str(f / NOTE)})])


def note_template_placeholder(db: Path, bugs: tuple[str, ...]) -> bool:
    return not _answered(db, bugs, [("note_template", {"kind": "agenda"})])


def search_query_off_by_one(db: Path, bugs: tuple[str, ...]) -> bool:
    return not _answered(db, bugs, [("search_notes", {"query": "q" * SEARCH_QUERY_MAX})])


def export_path_object(db: Path, bugs: tuple[str, ...]) -> bool:
    return not _answered(db, bugs, [
        ("open_calendar", {"name": "exports"}),
        ("export_calendar", {"calendarId": lambda _, r: r[0]["structuredContent"]["calendarId"]}),
    ])


MUTANT_CHECKS: dict[str, Callable[[Path, tuple[str, ...]], bool]] = {
    "read-note-mtime-ns": read_note_mtime_ns,
    "note-template-placeholder": note_template_placeholder,
    "search-query-off-by-one": search_query_off_by_one,
    "export-path-object": export_path_object,
}


def test_the_tools_refuse_the_values_a_schema_alone_gives(tmp_path: Path) -> None:
    """What makes these bugs reach-only: on the values generation draws from the schema alone (a
    relative or outside path, an unknown kind or calendarId, a short query), every mutant answers
    exactly as the reference does."""
    folder = workspace(tmp_path)
    calls = [("read_note", {"path": "tempest"}), ("read_note", {"path": "/etc"}),
             ("note_template", {"kind": "tempest"}), ("export_calendar", {"calendarId": "tempest"}),
             ("search_notes", {"query": "q" * (SEARCH_QUERY_MAX - 1)})]
    answers = []
    for bugs in ((), tuple(MUTANT_CHECKS)):
        with StdioServer(tmp_path / f"{len(bugs)}.sqlite3", *bugs, extra=("--workspace", str(folder)),
                         validate=False) as s:
            replies = [s.call(req(n, "tools/call", {"name": name, "arguments": args}))[0]["result"]
                       for n, (name, args) in enumerate(calls, 1)]
        answers.append([(r.get("isError", False), r["content"][0]["text"]) for r in replies])
    assert answers[0] == answers[1]
    assert [e for e, _ in answers[0]] == [True, True, True, True, False]


# --- campaigns -------------------------------------------------------------------------------------

# bug -> the tools its "without the value" campaign may call (--allow-tool), examples. The finding
# campaigns are default ones (every property, every tool): the surface search tries each tool with
# its pools' values before generation, and a call that kills the process is where generation starts.
PLAN: dict[str, tuple[tuple[str, ...], int]] = {
    "read-note-mtime-ns": (("read_note",), 100),
    "export-path-object": (("open_calendar", "export_calendar"), 100),
    "search-query-off-by-one": (("search_notes",), 100),
    "note-template-placeholder": (("note_template",), 100),
}
NOT_FOUND: dict[str, str] = {}


def test_every_reach_mutant_has_a_plan() -> None:
    assert set(found_by("reach")) == set(PLAN) == set(MUTANT_CHECKS)
    assert all(MUTANTS[b].rules == ("RPC-01",) for b in PLAN)


def _campaign(tmp_path: Path, tgt: str, tools: tuple[str, ...], examples: int, name: str) -> tuple[int, Path]:
    out = tmp_path / f"out-{name}"
    status = cli_main(["fuzz", "--target", tgt, "--max-examples", str(examples), "--no-coverage",
                       "--seed", "20260728", "--out", str(out), "--no-database", "--shrink-time", "4",
                       "--first-finding", "--progress", "never", *(a for t in tools for a in ("--allow-tool", t))])
    return status, out


def _findings(out: Path, rules: tuple[str, ...]) -> list[dict[str, Any]]:
    index = orjson.loads((out / "findings.json").read_bytes())
    return [f for f in index["findings"] if f["rule"] in rules]


@pytest.mark.parametrize("bug", [pytest.param(b, marks=pytest.mark.xfail(reason=NOT_FOUND[b], strict=True))
                                 if b in NOT_FOUND else b for b in PLAN])
def test_a_short_campaign_finds_it_and_the_repro_replays(bug: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _tools, examples = PLAN[bug]
    folder = workspace(tmp_path)
    tgt = target(tmp_path / "mutant.sqlite3", str(folder), bug)
    status, out = _campaign(tmp_path, tgt, (), examples, "mutant")
    printed = capsys.readouterr().out
    found = _findings(out, MUTANTS[bug].rules)
    assert status == 1 and found, printed[-3000:]
    assert not processes_mentioning(str(tmp_path / "mutant.sqlite3")), "the campaign left a server running"
    repro = out / found[0]["repro"]
    sent = [e for e in orjson.loads(repro.read_bytes())["transcript"]["events"] if e["kind"] == "send"]
    assert 1 <= len(sent) <= 12
    assert cli_main(["replay", str(repro), "--show"]) == 1, capsys.readouterr().out
    fixed = target(tmp_path / "reference.sqlite3", str(folder))
    assert cli_main(["replay", str(repro), "--target", fixed, "--show"]) == 0, capsys.readouterr().out


def test_read_note_without_the_folder_on_the_command_line_is_not_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The same campaign on the same mutant, the folder named relative to the server's working
    directory: the command line then holds no absolute path inside it (and no entries of it are
    offered), read_note refuses every relative path, and nothing is found."""
    workspace(tmp_path)
    monkeypatch.chdir(tmp_path)  # the campaign's server processes start here
    tgt = target(tmp_path / "mutant.sqlite3", "notes", "read-note-mtime-ns")
    status, out = _campaign(tmp_path, tgt, ("read_note",), PLAN["read-note-mtime-ns"][1], "relative")
    assert status == 0 and not _findings(out, ("RPC-01",)), capsys.readouterr().out[-3000:]


def test_export_without_the_handle_minting_tool_is_not_found(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The same campaign with open_calendar withheld: no calendarId was ever returned, so no pool
    holds a valid handle, and export_calendar only ever refuses."""
    tgt = target(tmp_path / "mutant.sqlite3", str(workspace(tmp_path)), "export-path-object")
    status, out = _campaign(tmp_path, tgt, ("export_calendar",), PLAN["export-path-object"][1], "no-handle")
    assert status == 0 and not _findings(out, ("RPC-01",)), capsys.readouterr().out[-3000:]
