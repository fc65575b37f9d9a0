"""The README is the user's manual: its commands must be the ones that work, and CI must run its test command."""

from __future__ import annotations

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
    assert ("**total**", f"**{cat.total_tokens}**", f"**{cat.total_bytes}**") in rows
    tools = cat.costs["tools"]
    assert (f"Seven tool definitions cost {cat.tokens('tools')} tokens (cheapest `{tools[-1].name}` "
            f"{tools[-1].tokens}, costliest `{tools[0].name}`") in " ".join(section.split())
    assert len(tools) == 7
