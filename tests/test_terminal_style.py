"""Colour on a terminal only, tables within 100 columns, a catalogue folder only when asked (issue 32).

The commands run for real: under a pseudo-terminal (python's pty module, output post-processing
off so the bytes read are the bytes written) to see colour, and with NO_COLOR, --no-color, the
configuration, or a pipe to see none. The target is tests/hostile/hostile_list.py with a first
tool whose name and description hold escape sequences (a screen clear, a blink SGR of a code this
harness never writes, a window title), a forged line and 40 double-width characters, and every
tools/call answered isError with more of the same: on the terminal the only escape sequences
must be the SGR codes fuzz/terminal_style.py writes, and every table row must fit in 100 columns.
"""

from __future__ import annotations

import importlib
import os
import re
import select
import shlex
import subprocess
import termios
import time
import unicodedata
from pathlib import Path

import orjson
import pytest
from fuzz_support import CLI, PYTHON

from mcp_tempest.fuzz import terminal_style
from mcp_tempest.fuzz.verdict_line import final_line, verdict

HOSTILE = Path(__file__).resolve().parent / "hostile"
WIDE = "名" * 40
NAME = f"{WIDE[:6]}a\x1b[2Jb\x1b[5;35mblink\x1b]0;pwned\x07c\r\nFAKE LINE: 0 findings{WIDE}"
DESCRIPTION = "desc \x1b[2J \x1b[5;35m \r\nFAKE LINE: 0 findings"
ANSWER = "refused \x1b[2J\x1b[5;35m\x1b]0;pwned\x07\r\nFAKE LINE: 0 findings " + "x" * 200
SERVER = '''\
"""hostile_list.py with hostile text in its first tool; every tools/call answered isError."""
import sys

sys.path.insert(0, {hostile!r})
sys.argv = [sys.argv[0], "--tools", "2", "--name", {name!r}, "--description", {description!r}]
import _base  # noqa: E402
import hostile_list  # noqa: E402  (reads its options now)

_base.tool_called = lambda params: {{"content": [{{"type": "text", "text": {answer!r}}}], "isError": True}}
_base.serve(hostile_list.handle)
'''
# Every escape sequence the harness itself writes: the SGR codes of fuzz/terminal_style.py.
OURS = {f"\x1b[{code}m" for code in ("0", terminal_style.RED, terminal_style.YELLOW, terminal_style.GREEN,
                                     terminal_style.BOLD_RED, terminal_style.DIM)}
SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The hostile server as a target; its text stays off the command line (a file of its own)."""
    path = tmp_path_factory.mktemp("hostile") / "hostile_text.py"
    path.write_text(SERVER.format(hostile=str(HOSTILE), name=NAME, description=DESCRIPTION, answer=ANSWER))
    return "stdio:" + shlex.join([PYTHON, str(path)])


def plain_env(**extra: str) -> dict[str, str]:
    """The test's environment without any colour setting of the user's, on a colour terminal."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR") and not k.startswith("MCP_TEMPEST_")}
    return {**env, "TERM": "xterm-256color", **extra}


def in_pty(args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 180.0) -> tuple[int, str]:
    """Run the command with stdout and stderr on one pseudo-terminal; (status, what it showed)."""
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no \n -> \r\n: a raw \r from the server must stay visible
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([*CLI, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                pytest.fail(f"{args[0]} under a pty still running after {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8")


def piped(args: list[str], *, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=180)


def assert_only_our_escapes(shown: str) -> None:
    """Every ESC on the screen opens one of our SGR codes; no other control but the newline."""
    assert set(SGR.findall(shown)) <= OURS, set(SGR.findall(shown)) - OURS
    rest = SGR.sub("", shown)
    bad = sorted({f"U+{ord(ch):04X}" for ch in rest if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")})
    assert not bad, f"raw {bad} on the terminal"
    assert not any(line.startswith("FAKE LINE") for line in rest.splitlines())


def display_columns(line: str) -> int:
    """The terminal columns of a line, counted here apart from the code under test."""
    line = SGR.sub("", line)
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in line)


def fuzz_args(target: str, out: Path, *more: str) -> list[str]:
    return ["fuzz", "--target", target, "--max-examples", "5", "--seed", "1", "--no-coverage",
            "--progress", "never", "--no-database", "--out", str(out), *more]


# --- colour on a terminal, and never anywhere else ---


def test_fuzz_on_a_terminal_colours_the_verdict_and_severities_and_nothing_the_server_wrote(
        hostile: str, tmp_path: Path) -> None:
    status, shown = in_pty(fuzz_args(hostile, tmp_path / "out"), env=plain_env(), cwd=tmp_path)
    assert status == 1, shown[-3000:]
    assert_only_our_escapes(shown)
    last = shown.rstrip("\n").splitlines()[-1]
    assert f"\x1b[{terminal_style.RED}mFAIL\x1b[0m" in last, last
    findings = [line for line in shown.splitlines() if line.startswith(("  finding ", "  observation "))]
    assert findings, shown[-3000:]
    for line in findings:  # the label right after the id, in its strength's colour
        assert re.match(r"  \w+ \S+: \x1b\[(31|33)m(unconfirmed )?(MUST|SHOULD|HEURISTIC)\x1b\[0m ", line), line
    assert f"{WIDE[:6]}a\\x1b[2Jb" in shown  # the hostile name is on the screen, escaped (the reach table)
    # what went to files carries no colour
    for name in ("findings.json", "summary.md", "junit.xml", "report.html"):
        assert "\x1b[" not in (tmp_path / "out" / name).read_text(encoding="utf-8"), name


def test_a_clean_campaign_on_a_terminal_ends_in_a_green_pass(tmp_path: Path) -> None:
    status, shown = in_pty(["fuzz", "--properties", "valid", "--max-examples", "5", "--seed", "1", "--no-coverage",
                            "--progress", "never", "--no-database", "--out", str(tmp_path / "out")],
                           env=plain_env(), cwd=tmp_path)
    assert status == 0, shown[-3000:]
    assert_only_our_escapes(shown)
    assert f"\x1b[{terminal_style.GREEN}mPASS\x1b[0m" in shown.rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("how", ["NO_COLOR=1", "--no-color", "MCP_TEMPEST_NO_COLOR=true", "config", "TERM=dumb"])
def test_no_colour_when_the_user_says_so(how: str, hostile: str, tmp_path: Path) -> None:
    args = ["catalogue", "--no-drift", "--target", hostile, "--max-tool-tokens", "5"]
    env = plain_env()
    if how.startswith("--"):
        args.append(how)
    elif how == "config":
        (tmp_path / "pyproject.toml").write_text('[tool.mcp-tempest]\nno-color = true\n')
    else:
        key, value = how.split("=")
        env[key] = value
    status, shown = in_pty(args, env=env, cwd=tmp_path)
    assert status == 1, shown  # the gate: over --max-tool-tokens
    assert "\x1b" not in shown, shown
    assert "observation HEURISTIC TEXT-02" in shown and "catalogue: over budget" in shown


def test_catalogue_on_a_terminal_colours_its_observations_and_budget_verdict_only(
        hostile: str, tmp_path: Path) -> None:
    status, shown = in_pty(["catalogue", "--no-drift", "--target", hostile, "--max-tool-tokens", "5"],
                           env=plain_env(), cwd=tmp_path)
    assert status == 1, shown
    assert_only_our_escapes(shown)
    assert f"observation \x1b[{terminal_style.YELLOW}mHEURISTIC\x1b[0m TEXT-02" in shown
    gate = next(line for line in shown.splitlines() if "over budget" in line)
    assert gate.startswith(f"\x1b[{terminal_style.RED}mcatalogue: over budget") and gate.endswith("\x1b[0m")


def test_captured_output_has_no_colour_unless_forced(hostile: str, tmp_path: Path) -> None:
    args = ["catalogue", "--no-drift", "--target", hostile, "--max-tool-tokens", "5"]
    proc = piped(args, env=plain_env(), cwd=tmp_path)
    assert proc.returncode == 1 and "\x1b" not in proc.stdout + proc.stderr
    forced = piped(args, env=plain_env(FORCE_COLOR="1"), cwd=tmp_path)
    assert f"\x1b[{terminal_style.YELLOW}mHEURISTIC" in forced.stdout
    assert_only_our_escapes(forced.stdout + forced.stderr)
    refused = piped([*args, "--no-color"], env=plain_env(FORCE_COLOR="1"), cwd=tmp_path)
    assert "\x1b" not in refused.stdout + refused.stderr  # the user's --no-color wins over FORCE_COLOR
    # with colour off the text is the plain text, byte for byte
    assert SGR.sub("", forced.stdout) == proc.stdout


def test_the_verdict_word_is_coloured_only_when_asked() -> None:
    assert final_line("fuzz", "1 example", 1, ["x"], colour=False) == "fuzz: 1 example: FAIL (x)"
    assert final_line("fuzz", "1 example", 2, colour=True) == "fuzz: 1 example: \x1b[1;31mERROR\x1b[0m"
    assert verdict(130, colour=True) == "\x1b[33mINTERRUPTED\x1b[0m" and verdict(0) == "PASS"
    # a server's escape painted is shown escaped, inside our codes only
    assert terminal_style.paint("a\x1b[2Jb", terminal_style.RED, True) == "\x1b[31ma\\x1b[2Jb\x1b[0m"


def test_no_color_is_an_option_of_every_command_in_the_configuration(tmp_path: Path) -> None:
    from mcp_tempest.fuzz.config import CONFIGURABLE, apply_config

    for command, (module, builder) in CONFIGURABLE.items():
        parser = getattr(importlib.import_module(module), builder)()
        assert apply_config(command, [], parser, environ={"MCP_TEMPEST_NO_COLOR": "true"}, cwd=tmp_path) \
            == ["--no-color"], command
    proc = piped(["probe", "--no-color", "--bogus"], env=plain_env(), cwd=tmp_path)
    assert proc.returncode == 2 and "--bogus" in proc.stderr and "--no-color" not in proc.stderr


# --- widths ---


def test_fuzz_tables_fit_in_100_columns(hostile: str, tmp_path: Path) -> None:
    proc = piped(fuzz_args(hostile, tmp_path / "out"), env=plain_env(), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("most common answer"))
    end = next(i for i, line in enumerate(lines) if line.startswith("reach:"))
    tool_rows = lines[start:end]
    assert len(tool_rows) == 3 and any(f"{WIDE[:6]}a\\x1b[2Jb" in row for row in tool_rows), tool_rows  # header + 2 tools
    assert any("refused \\x1b[2J" in row for row in tool_rows)  # the answer column, escaped and cut
    rows = [i for i, line in enumerate(lines) if re.match(r"  \w+\[\w+\] +\d+ examples", line)]
    assert len(rows) >= 5
    after = rows[-1] + 1
    while lines[after].startswith("      "):
        after += 1
    table = tool_rows + lines[rows[0]:after]  # the property rows and the notes under them
    too_wide = [(display_columns(line), line) for line in table if display_columns(line) > 100]
    assert not too_wide, too_wide
    assert max(display_columns(line) for line in tool_rows) > 80  # the cut is what kept them in


def test_catalogue_tables_fit_in_100_columns(hostile: str, tmp_path: Path) -> None:
    proc = piped(["catalogue", "--no-drift", "--target", hostile], env=plain_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("definition "))
    table = lines[start:next(i for i, line in enumerate(lines) if line.startswith("every turn:"))]
    assert any(line.startswith(f"tool {WIDE[:6]}a\\x1b[2Jb") for line in table)
    assert [display_columns(line) for line in table] == [100] * len(table)  # the long name's column: all of it
    # the cost table of --compare, against the same server with longer descriptions
    old = tmp_path / "old.json"
    old.write_text(piped(["catalogue", "--json", "--no-drift", "--target", hostile], env=plain_env(),
                         cwd=tmp_path).stdout)
    grown = "stdio:" + shlex.join([PYTHON, str(HOSTILE / "hostile_list.py"), "--tools", "2", "--name",
                                   "t" * 120, "--desc-bytes", "400"])
    proc = piped(["catalogue", "--no-drift", "--target", grown, "--compare", str(old)], env=plain_env(), cwd=tmp_path)
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("tool tokens "))
    table = [line for line in lines[start:] if not line.startswith(("catalogue:", "note:", "compared"))][:4]
    assert any("t" * 20 in line for line in table), table
    too_wide = [line for line in table if display_columns(line) > 100]
    assert not too_wide, too_wide


def test_the_width_helpers_count_columns_not_characters() -> None:
    assert terminal_style.columns("名名ab") == 6
    assert terminal_style.columns("\x1b[31mab\x1b[0m") == 2
    assert terminal_style.fit("名" * 10, 9) == "名名名..."
    assert terminal_style.cell("ab", 4) == "ab  " and terminal_style.cell("名" * 5, 8) == "名名... "
    assert terminal_style.wrap("aaa bbb ccc " + "d" * 12, 10, "  ") == ["  aaa bbb", "  ccc", "  dddddddd", "  dddd"]
    row = "  x" * 20
    assert terminal_style.with_status(row, ["short"]) == [f"{row}  short"]
    assert terminal_style.with_status(row, ["a" * 50, "b"], indent="    ") == [row, "    " + "a" * 50, "    b"]


# --- the catalogue's report folder ---


def test_catalogue_writes_a_report_folder_only_when_asked(hostile: str, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = plain_env(TMPDIR=str(scratch))
    shown = piped(["catalogue", "--target", hostile], env=env, cwd=work)
    proc = piped(["catalogue", "--target", hostile, "--json"], env=env, cwd=work)
    for run in (shown, proc):
        assert run.returncode == 0, run.stderr  # TEXT-* flags are observations
    assert list(work.iterdir()) == [] and list(scratch.iterdir()) == []
    assert "no report folder: --out DIR keeps" in shown.stdout
    doc = orjson.loads(proc.stdout)
    assert {f["rule"] for f in doc["findings"]} >= {"TEXT-02"}  # judged all the same
    out = tmp_path / "asked"
    proc = piped(["catalogue", "--target", hostile, "--out", str(out)], env=env, cwd=work)
    assert proc.returncode == 0 and f"output in {out}" in proc.stdout
    index = orjson.loads((out / "findings.json").read_bytes())
    assert (out / "catalogue.json").is_file() and index["findings"]
    assert all((out / f["repro"]).is_file() for f in index["findings"])
    (work / "pyproject.toml").write_text('[tool.mcp-tempest.catalogue]\nout = "reports"\n')
    proc = piped(["catalogue", "--target", hostile, "--json"], env=env, cwd=work)
    assert proc.returncode == 0 and (work / "reports" / "catalogue.json").is_file()
    assert list(scratch.iterdir()) == []
