"""The README is the user's manual: its commands must be the ones that work, and CI must run its test command."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci_lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                if ln.strip() and not ln.startswith("#") and "pytest" in ln]
    assert len(ci_lines) == 1
    assert ci_lines[0].strip() in _commands()


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"```sh\n", quick.split("To point it at", 1)[0])) == 2


# Commands from the README that finish in seconds on the embedded default: run them as written.
QUICK = [
    "mcp-tempest probe",
    "mcp-tempest frames --list",
    "mcp-tempest frames --method tools/call --count 5 --seed 7",
    "mcp-tempest frames --malformed embedded-newline --count 3",
    "mcp-tempest serve --list-bugs",
    "mcp-tempest catalogue",
    "mcp-tempest catalogue --json",
    "mcp-tempest catalogue --max-tokens 2000 --max-tool-tokens 200",
]


@pytest.mark.parametrize("command", QUICK)
def test_readme_command_works_as_written(command: str, tmp_path: Path) -> None:
    assert command in _commands(), f"{command!r} is no longer in the README"
    argv = shlex.split(command)
    exe = Path(sys.executable).with_name("mcp-tempest")
    done = subprocess.run([str(exe), *argv[1:]], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "printed nothing"
    assert "Traceback" not in done.stderr


def test_readme_catalogue_table_is_the_reference_servers_measured_now() -> None:
    from mcp_tempest.fuzz.catalogue import Catalogue, read
    from mcp_tempest.targets.target_spec import default_target

    section = README.split("### `mcp-tempest catalogue`", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| (\S[^|]*?) \| (\**\d+\**) \| (\**\d+\**) \|$", section, flags=re.M)
    cat = Catalogue.from_probe(read(default_target(), timeout=10, max_pages=20, drift=False).first)
    measured = [(row[0], str(row[1]), str(row[2])) for row in
                (line.rsplit(None, 2) for line in cat.table()[1:len(cat.everything()) + 1])]
    assert [(name, t, b) for name, t, b in rows if not name.startswith("**")] == measured
    # The headline is what the model pays every turn; resources, templates and prompts are their own row.
    assert ("**every turn (tools as one list + instructions)**", f"**{cat.turn_tokens}**",
            f"**{cat.turn_bytes}**") in rows
    assert ("**resources, templates, prompts (not every turn)**", f"**{cat.on_demand_tokens}**",
            f"**{cat.on_demand_bytes}**") in rows
    tools = cat.costs["tools"]
    assert (f"Seven tool definitions cost {cat.tools_list_cost.tokens} tokens as one list ({cat.tokens('tools')} "
            f"summed per tool; cheapest `{tools[-1].name}` {tools[-1].tokens}, costliest `{tools[0].name}`"
            ) in " ".join(section.split())
    assert len(tools) == 7


def test_quick_start_mutant_run_shows_a_finding_as_written(tmp_path: Path) -> None:
    """The quick start's second run is a newcomer's first finding: the command exactly as the README
    has it exits 1 with the RPC-01 finding the text promises (the clean run above it finds nothing)."""
    quick = README.split("## Quick start", 1)[1].split("To point it at", 1)[0]
    first = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)[0].splitlines()
    assert len(first) == 2 and "--bug null-id-accepted" in first[1]
    argv = shlex.split(first[1])
    exe = Path(sys.executable).with_name("mcp-tempest")
    # The target's own `mcp-tempest` is found on PATH, as in the newcomer's activated venv.
    env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(exe), *argv[1:]], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    promised = "finding RPC-01-...: MUST RPC-01 JSON that is not a valid request was served (a result)"
    assert promised in " ".join(quick.split())
    assert re.search(r"^  finding RPC-01-\w+: MUST RPC-01 JSON that is not a valid request was served \(a result\) ",
                     done.stdout, flags=re.M), done.stdout[-2000:]
    assert re.fullmatch(r"fuzz: \d+ examples, 1 properties, 1 findings", done.stdout.splitlines()[-1])
    assert "Traceback" not in done.stderr
