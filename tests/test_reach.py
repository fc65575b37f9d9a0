"""Reach: every campaign says how its tools were answered, and argument values come from the
command line, the user, the server's answers, the schema and the server's own source.

The campaigns here run real servers: the embedded reference, and the official git server
(`mcp-server-git`, installed by .ci/install-servers.sh) started on a repository made here, whose
every tool refuses a `repo_path` outside that repository.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tempest.fuzz.reach import Reach, ToolsReport
from mcp_tempest.fuzz.source_literals import literals_of
from mcp_tempest.strategies.value_sources import (
    ValueSources,
    command_line_values,
    harvest_text,
    schema_values,
)
from tests.fuzz_support import CLI, reference_stdio

COUNTS = ("calls", "ok", "is_error", "protocol_error", "input_required", "unanswered")


def _fuzz(tmp_path: Path, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "out"
    proc = subprocess.run([*CLI, "fuzz", "--no-database", "--out", str(out), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path)
    findings = json.loads((out / "findings.json").read_text()) if (out / "findings.json").is_file() else {}
    return proc, findings


def test_every_listed_tool_has_a_row_whose_counts_add_up(tmp_path: Path):
    proc, findings = _fuzz(tmp_path, "--target", reference_stdio(tmp_path / "db.sqlite3"), "--max-examples", "80",
                           "--seed", "3", "--properties", "valid,history,lists")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = {r["name"]: r for r in findings["reach"]["tools"]}
    listed = json.loads(subprocess.run([*CLI, "catalogue", "--json", "--target",
                                        reference_stdio(tmp_path / "db2.sqlite3")], capture_output=True, text=True,
                                       cwd=tmp_path, timeout=120).stdout)
    names = {t["name"] for t in listed.get("tools", [])} if isinstance(listed.get("tools"), list) else set(rows)
    assert names <= set(rows)
    for row in rows.values():
        assert all(isinstance(row[k], int) for k in COUNTS)
        assert row["ok"] + row["is_error"] + row["protocol_error"] + row["input_required"] + row["unanswered"] \
            <= row["calls"]
    assert rows["echo"]["ok"] > 0 and rows["echo"]["calls"] >= rows["echo"]["ok"]
    assert any(line.startswith("reach: ") for line in proc.stdout.splitlines())
    assert findings["reach"]["code"]["measured"] is True and findings["reach"]["code"]["percent"] > 10
    assert (tmp_path / "out" / "coverage.xml").is_file() and (tmp_path / "out" / "coverage_html" / "index.html").is_file()


@pytest.mark.parametrize("fork", [True, False])
def test_each_property_is_credited_with_the_code_its_processes_ran(tmp_path: Path, fork: bool):
    """Coverage contexts: a process runs in the context of the property during which it started
    (fork-served children switch to it, spawned ones read it from their rcfile), so the report
    says what each property contributed; framing's malformed frames reach parse errors that valid's
    well-formed requests never do."""
    args = ["--target", reference_stdio(tmp_path / "db.sqlite3"), "--max-examples", "60", "--seed", "1",
            "--properties", "framing,valid", *([] if fork else ["--no-fork-server"])]
    proc, findings = _fuzz(tmp_path, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    contexts = {c["context"]: c for c in findings["reach"]["code"]["contexts"]}
    assert {"framing", "valid"} <= set(contexts) <= {"framing", "valid", "start-up and surface search"}, contexts
    assert contexts["framing"]["only"] > 0 and contexts["valid"]["lines"] > 0, contexts
    assert "code coverage by property (lines run; lines no other ran): " in proc.stdout


def test_a_tool_that_never_succeeds_is_named_with_its_most_common_answer():
    reach = Reach()
    listed = frozenset({"ok_tool", "refusing", "quiet"})
    refusal = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "Path x is outside"}],
                                                     "isError": True, "resultType": "complete"}}
    ok = {"jsonrpc": "2.0", "id": 2, "result": {"content": [], "resultType": "complete"}}
    for _ in range(3):
        reach.add_answer("refusing", {}, refusal, listed)
    reach.add_answer("ok_tool", {}, ok, listed)
    reach.add_answer("nope", {}, ok, listed)
    report = ToolsReport(reach, ["ok_tool", "refusing", "quiet", "withheld"], ["withheld"])
    assert report.never_ok() == ["refusing", "quiet"]
    assert report.headline() == ("reach: 2 of 3 tools never returned a successful result: refusing, quiet "
                                 "(most common answer: 'Path x is outside')")
    rows = {r["name"]: r for r in report.rows()}
    assert rows["refusing"]["is_error"] == 3 and rows["refusing"]["answers"][0]["count"] == 3
    assert rows["quiet"]["never_called"] == "no call generated"
    assert rows["withheld"]["never_called"] == "withheld by the tool policy"
    assert reach.unknown_calls == 1
    again = Reach.from_json(json.loads(json.dumps(reach.to_json())))
    assert again.to_json() == reach.to_json()


def test_value_pools():
    assert command_line_values(["mcp-server-git", "--repository", "/srv/repo", "-v"]) == ["/srv/repo"]
    assert command_line_values([sys.executable, "-u", "server.py", "--root=data/x", "--port", "{port}"],
                               "/w") == ["data/x", "/w/data/x"]
    assert command_line_values(["python", "-m", "pkg", "https://a.test/x"]) == ["https://a.test/x"]
    assert schema_values({"type": "integer", "minimum": 1, "exclusiveMaximum": 100, "default": 5}) == [5, 1, 99]
    assert schema_values({"type": "string", "minLength": 2, "maxLength": 4, "examples": ["ex"],
                          "enum": ["ex", "why"]}) == ["ex", "why", "aa", "aaaa"]
    text: list[str] = []
    harvest_text("* main\n  feature/x\ncommit 4f2a9c1b by someone\n", text)
    assert {"main", "feature/x", "4f2a9c1b"} <= set(text) and "someone" not in text
    pools = ValueSources(command_line=["/srv/repo", "https://a.test"], user={"t": {"account": ["A-1"]}},
                         returned={"calendarId": ["cal-9"]}, literals=["local", 7], returned_text=["main"])
    assert pools.candidates("t", "repo_path", {"type": "string"})[0] == ("command line", "/srv/repo")
    assert ("command line", "https://a.test") in pools.candidates("t", "base_url", {"type": "string"})
    assert pools.candidates("t", "account", {"type": "string"})[0] == ("user", "A-1")
    assert ("returned", "cal-9") in pools.candidates("t", "calendarId", {"type": "string"})
    assert ("source literal", "local") in pools.candidates("t", "branch_type", {"type": "string"})
    assert ("source literal", 7) not in pools.candidates("t", "branch_type", {"type": "string"})
    assert ("command line", ["/srv/repo"]) in pools.candidates("t", "files", {"type": "array",
                                                                             "items": {"type": "string"}})
    assert pools.attribute("t", {"repo_path": "/srv/repo", "n": 3}) == "command line"
    assert pools.attribute("t", {"account": "A-1", "repo_path": "/srv/repo"}) == "user + command line"
    assert pools.attribute("t", {"q": "zzz"}) == "generated"


def test_source_literals_are_what_the_code_branches_on(tmp_path: Path):
    (tmp_path / "srv.py").write_text('"""Docstring words are not values."""\n'
                                     'def branch(kind: str, n: int = 25):\n'
                                     '    """Neither is this."""\n'
                                     '    if kind == "local":\n        return 1\n'
                                     '    match kind:\n        case "remote":\n            return 2\n'
                                     '    raise ValueError(f"Invalid kind: {kind}")\n')
    named, found = literals_of([str(tmp_path)])
    assert {"local", "remote", 25} <= set(found)
    assert sorted(named["kind"]) == ["local", "remote"]
    assert not [v for v in found if isinstance(v, str) and ("Docstring" in v or "Invalid" in v)]
    pools = ValueSources(literals=found, literal_names=named)
    assert sorted([v for s, v in pools.candidates("t", "kind", {"type": "string"}) if s == "source literal"][:2]) == \
        ["local", "remote"]


def test_tool_args_file_errors_are_one_line(tmp_path: Path):
    bad = tmp_path / "args.json"
    bad.write_text('{"echo": 3}')
    proc, _ = _fuzz(tmp_path, "--tool-args", str(bad), "--max-examples", "1")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "echo must map argument names to values" in proc.stderr
    proc, _ = _fuzz(tmp_path, "--tool-args", str(tmp_path / "missing.json"), "--max-examples", "1")
    assert proc.returncode == 2 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr


def _git_repo(where: Path) -> Path:
    """A repository as a user's is: a few commits' worth of history, a branch, a pending change."""
    repo = where / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"],
                 ["branch", "feature"]):
        if args[0] == "add":
            (repo / "notes.txt").write_text("hello\n")
            (repo / "a.txt").write_text("a\n")
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (repo / "notes.txt").write_text("hello\nchanged\n")
    (repo / "todo.txt").write_text("new\n")
    return repo


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mcp-server-git") is None or shutil.which("git") is None,
                    reason="mcp-server-git (bash .ci/install-servers.sh) and git are needed")
def test_the_official_git_server_runs_its_tool_bodies(tmp_path: Path):
    """Started with --repository, every tool refuses a repo_path outside it: the command line's
    value reaches them, the source's literals git_branch's branch_type, an answer's commit id
    git_diff's target, git_add's success the state git_commit needs, the user's file git_add's
    files. Before reach, not one of the 12 tools returned a success."""
    repo = _git_repo(tmp_path)
    args = tmp_path / "tool-args.json"
    args.write_text(json.dumps({"git_add": {"files": [["notes.txt"]]}}))
    proc, findings = _fuzz(tmp_path, "--target", f"stdio:mcp-server-git --repository {repo}", "--max-examples", "40",
                           "--seed", "11", "--properties", "valid", "--tool-args", str(args), timeout=900)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {r["name"]: r for r in findings["reach"]["tools"]}
    assert len(rows) == 12
    succeeded = sorted(n for n, r in rows.items() if r["ok"])
    assert len(succeeded) >= 11, (succeeded, findings["reach"]["never_ok"])
    assert rows["git_status"]["first_ok_source"] == "command line"
    assert rows["git_add"]["first_ok_source"] == "user + command line"
    assert rows["git_branch"]["first_ok_source"] == "command line + schema"  # 'local': quoted in its description
    assert "reach: " in proc.stdout and "code coverage: " in proc.stdout
    code = findings["reach"]["code"]
    server = [f for f in code["files"] if f["path"].endswith("mcp_server_git/server.py")]
    assert code["measured"] and server and server[0]["percent"] > 60


def test_a_second_run_sharing_the_database_starts_from_the_first_runs_corpus(tmp_path: Path):
    """Night one saves the examples that drew a new kind of answer; night two (another seed) plays
    them first, and each still draws a case (none dropped as stale)."""
    db = tmp_path / "db"
    nights = []
    for seed in ("1", "2"):
        out = tmp_path / f"night-{seed}"
        proc = subprocess.run([*CLI, "fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3"), "--max-examples",
                               "150", "--seed", seed, "--database", str(db), "--properties", "valid,lists",
                               "--no-coverage", "--out", str(out)], capture_output=True, text=True, timeout=600,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        notes = [line for line in proc.stdout.splitlines() if "reach corpus:" in line]
        nights.append([(int(n.split("reach corpus: ")[1].split(" ")[0]), int(n.split(", ")[-1].split(" ")[0]))
                       for n in notes])
    saved_first = sum(saved for _played, saved in nights[0])
    played_second = sum(played for played, _saved in nights[1])
    assert saved_first > 0 and [p for p, _ in nights[0]] == [0, 0]
    assert played_second >= saved_first  # every entry of night one still draws (stale ones would be dropped)
    off = subprocess.run([*CLI, "fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3"), "--max-examples", "150",
                          "--seed", "3", "--database", str(db), "--properties", "valid", "--no-coverage",
                          "--guidance", "none", "--out", str(tmp_path / "off")], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert off.returncode == 0 and "reach corpus" not in off.stdout
