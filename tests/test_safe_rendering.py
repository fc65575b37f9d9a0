"""Everything a server wrote reaches the terminal, summary.md and report.html rendered safe (issue 30).

The server is tests/hostile/hostile_list.py with a first tool whose name and description hold a
screen clear (ESC[2J), a window-title sequence (ESC]0;pwned BEL), a forged summary line
(`\\r\\nFAKE LINE: 0 findings`), a right-to-left override and a zero-width space; a small wrapper
also answers every tools/call with isError and more of the same, so the reach lines and load's
answers quote it too. The wrapper keeps the hostile text off the command line (the target the
user typed is their own text). Each test runs the real command and reads its raw bytes (text
mode would turn a raw CR into a newline and hide it).
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from fuzz_support import CLI, PYTHON

from mcp_tempest.fuzz.safe_text import html_text, markdown_cell, markdown_code, visible

HOSTILE = Path(__file__).resolve().parent / "hostile"
NAME = "a\x1b[2Jb\x1b]0;pwned\x07c\r\nFAKE LINE: 0 findings\u202ed\u200be"
DESCRIPTION = "desc \x1b[2J \x1b]0;pwned\x07 \r\nFAKE LINE: 0 findings \u202e \u200b end"
ERROR = "refused \x1b[2J\x1b]0;pwned\x07\r\nFAKE LINE: 0 findings\u202e\u200b"
# How each hostile piece must show, escaped, wherever it lands.
ESCAPED = ("\\x1b[2J", "\\x1b]0;pwned\\x07", "\\u202e", "\\u200b")

SERVER = '''\
"""hostile_list.py with hostile text (see tests/test_safe_rendering.py); every tools/call isError.
python hostile_text.py: stdio; python hostile_text.py PORT: Streamable HTTP through http_front.py."""
import json
import runpy
import sys

HOSTILE = {hostile!r}
sys.path[:0] = [HOSTILE, {here!r}]
_argv, sys.argv = sys.argv, [sys.argv[0], "--name", {name!r}, "--description", {description!r}]
import _base  # noqa: E402
import hostile_list  # noqa: E402  (reads its options now)

sys.argv = _argv


def handle(line, n):
    try:
        msg = json.loads(line)
    except ValueError:
        msg = None
    out = _base.reply(line)
    if isinstance(msg, dict) and msg.get("method") == "tools/call" and out is not None \\
            and out.get("error", {{}}).get("code") == -32601:
        body = {{"content": [{{"type": "text", "text": {error!r}}}], "isError": True}}
        _base.write(_base.result(msg.get("id"), body))
        return
    hostile_list.handle(line, n)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.argv = [HOSTILE + "/http_front.py", sys.argv[1], "hostile_text"]
        runpy.run_path(HOSTILE + "/http_front.py", run_name="__main__")
    else:
        _base.serve(handle)
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("hostile-text")
    path = here / "hostile_text.py"
    path.write_text(SERVER.format(hostile=str(HOSTILE), here=str(here), name=NAME, description=DESCRIPTION,
                                  error=ERROR))
    return path


def run(*args: str, timeout: float = 180.0) -> tuple[int, str, str]:
    """The real command; stdout and stderr as the bytes the terminal would get, decoded as is."""
    proc = subprocess.run([*CLI, *args], capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def assert_safe(text: str, where: str) -> None:
    """Nothing in `text` can act on a terminal or hide: no control character but the newline
    between lines, no format character (bidi, zero-width), no line or paragraph separator."""
    bad = sorted({f"U+{ord(ch):04X}" for ch in text if ch != "\n" and (
        unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") or ch == "\x9b")})
    assert not bad, f"{where}: raw {', '.join(bad)}"


def assert_no_forged_line(text: str, where: str) -> None:
    # splitlines also breaks at CR, VT, FF, U+2028...: a line a terminal or a viewer would start
    forged = [line for line in text.splitlines() if line.lstrip(" |>").startswith("FAKE LINE")]
    assert not forged, f"{where}: a forged line of its own: {forged!r}"


def markdown_shown(md: str) -> str:
    """What a Markdown viewer shows of summary.md's text: backslash escapes of punctuation undone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", md)


def test_catalogue_prints_the_hostile_name_escaped_and_keeps_it_raw_in_its_json(
        server: Path, tmp_path: Path) -> None:
    out = tmp_path / "cat"
    status, stdout, stderr = run("catalogue", "--target", f"stdio:{PYTHON} {server}", "--out", str(out),
                                 "--max-tool-tokens", "50")
    assert status == 1, stderr  # the hostile tool is over the budget: the gate line quotes its name
    for text, where in ((stdout, "stdout"), (stderr, "stderr")):
        assert_safe(text, where)
        assert_no_forged_line(text, where)
    shown = visible(NAME)
    assert "\\r\\nFAKE LINE: 0 findings" in shown
    assert f"tool {shown} " in stdout  # the cost table's row
    assert f"costliest {shown} " in stdout
    assert f"in tool {shown}: name" in stdout  # the TEXT-* observations' titles
    assert "over --max-tool-tokens 50: " + shown in stderr
    for piece in ESCAPED:
        assert piece in stdout
    # catalogue.json (the --json document) keeps what the server sent
    doc = orjson.loads((out / "catalogue.json").read_bytes())
    assert doc["tools"][0]["name"] == NAME
    # the untrusted-text observations still fire, at offsets into the raw text
    flags = {(f["rule"], f["title"].rsplit(": ", 1)[-1]): f["detail"] for f in doc["findings"]
             if f["rule"].startswith("TEXT-") and NAME in f["title"]}
    assert flags[("TEXT-02", "name")].startswith(f"at {NAME.index(chr(0x1b))}: ")
    assert flags[("TEXT-01", "name")].startswith(f"at {NAME.index(chr(0x202e))}: ")
    assert flags[("TEXT-02", "description")].startswith(f"at {DESCRIPTION.index(chr(0x1b))}: ")
    assert flags[("TEXT-01", "description")].startswith(f"at {DESCRIPTION.index(chr(0x202e))}: ")


def test_fuzz_summary_reports_and_replay_show_the_server_text_escaped(server: Path, tmp_path: Path) -> None:
    out = tmp_path / "fuzz"
    status, stdout, stderr = run("fuzz", "--target", f"stdio:{PYTHON} {server}", "--max-examples", "20",
                                 "--seed", "1", "--no-coverage", "--progress", "never", "--out", str(out))
    assert status in (0, 1), stderr
    for text, where in ((stdout, "stdout"), (stderr, "stderr")):
        assert_safe(text, where)
        assert_no_forged_line(text, where)
    # the reach lines: the tool's name, cut to its column, and the isError text it answered
    row = next(line for line in stdout.splitlines() if line.startswith("  a\\x1b[2J"))
    assert row[2:31] == "a\\x1b[2Jb\\x1b]0;pwned\\x07... "  # its 28 columns, never an escape cut in two
    assert "refused \\x1b[2J\\x1b]0;pwned\\x07 FAKE LINE: 0 findings\\u202e\\u200b" in stdout

    md = (out / "summary.md").read_bytes().decode("utf-8")
    assert_safe(md, "summary.md")
    assert_no_forged_line(md, "summary.md")
    shown = markdown_shown(md)
    assert f"| {visible(NAME)} |" in shown  # the reach table
    assert f"| tool {visible(NAME)} |" in shown  # the catalogue table
    for piece in ESCAPED:
        assert piece in shown

    page = (out / "report.html").read_bytes().decode("utf-8")
    assert_safe(page, "report.html")
    assert_no_forged_line(page, "report.html")
    assert html_text(NAME) in page
    assert "<mark>\\x1b</mark>[2J" in page and "<mark>\\r\\n</mark>FAKE LINE" in page
    assert "<mark>\\u202e</mark>" in page  # also inside the transcripts' JSON, which orjson leaves raw

    junit = (out / "junit.xml").read_bytes().decode("utf-8")
    assert_safe(junit, "junit.xml")
    ET.fromstring(junit)

    repro = sorted((out / "repro").glob("*.json"))
    assert repro, "the campaign found nothing to replay"
    status, stdout, stderr = run("replay", "--show", str(repro[0]))
    for text, where in ((stdout, "replay stdout"), (stderr, "replay stderr")):
        assert_safe(text, where)
        assert_no_forged_line(text, where)
    assert "\\u202e" in stdout  # the tools/list answer in the shown transcript


def test_load_table_answers_and_report_show_the_server_text_escaped(server: Path, tmp_path: Path) -> None:
    out = tmp_path / "load"
    status, stdout, stderr = run("load", "--target", f"http+spawn:{PYTHON} {server} {{port}}", "--run-time", "2s",
                                 "--users", "2", "--progress-every", "0", "--out", str(out))
    assert status in (0, 1), stderr
    for text, where in ((stdout, "stdout"), (stderr, "stderr")):
        assert_safe(text, where)
        assert_no_forged_line(text, where)
    assert f"tools/call {visible(NAME)} " in stdout  # a row of the table, named after the tool
    assert "\\x1b]0;pwned\\x07 FAKE LINE: 0 findings\\u202e\\u200b" in stdout  # the isError answers
    page = (out / "report.html").read_bytes().decode("utf-8")
    assert_safe(page, "load report.html")
    assert_no_forged_line(page, "load report.html")
    assert html_text(f"tools/call {NAME}") in page


# --- the functions themselves, on what the commands above do not reach ---


def test_visible_bounds_a_name_without_cutting_an_escape() -> None:
    assert visible("plain ascii, kept as is") == "plain ascii, kept as is"
    assert visible("日本語 é ❤️") == "日本語 é ❤️"  # printable text of any script is left alone
    assert visible("\u3164\U000e0041\u2028\ud800") == "\\u3164\\U000e0041\\u2028\\ud800"
    for limit in range(3, 16):
        cut = visible("ab\x1b[2J" * 4, limit)
        assert len(cut) <= limit + 3 and cut.endswith("...")
        assert re.fullmatch(r"(?:[^\\]|\\x1b)*", cut[:-3]), cut  # never `\x1...`
    assert visible("one\ntwo\rthree", multiline=True) == "one\ntwo\\rthree"
    mixed = NAME + "|\U0001f600\U000e0041\ud800" + ERROR
    assert visible(mixed) == visible(mixed, 10_000)  # the whole-text path and the cutting one agree
    assert html_text(mixed) == html_text(mixed, 10_000)


def test_markdown_cell_cannot_open_a_column_a_code_span_a_link_or_html() -> None:
    cell = markdown_cell("a|b`c<img src=x>[click](http://x) C:\\dir\\|")
    assert "|" not in cell.replace("\\|", "")
    assert "`" not in cell.replace("\\`", "")
    assert "<" not in cell.replace("\\<", "") and "](" not in cell
    assert markdown_shown(cell) == "a|b`c<img src=x>[click](http://x) C:\\dir\\|"
    assert markdown_code("a``b") == "```a``b```"


def test_html_text_marks_hidden_characters_but_never_inside_an_attribute() -> None:
    assert html_text("<b>\x1b[2J\u202e") == "&lt;b&gt;<mark>\\x1b</mark>[2J<mark>\\u202e</mark>"
    assert html_text("\"\x1b", mark=False) == "&quot;\\x1b"


def test_a_known_baseline_gone_reason_is_printed_escaped(tmp_path: Path) -> None:
    """`--known` takes the titles of an earlier findings.json, which quote the server: the "gone"
    line shows them escaped."""
    known = tmp_path / "known.json"
    known.write_bytes(orjson.dumps({"findings": [{"id": "f00dfeed", "strength": "MUST", "rule": "TOOL-01",
                                                  "title": f"tool {NAME} broke"}]}))
    status, stdout, stderr = run("fuzz", "--properties", "ids", "--max-examples", "2", "--seed", "1",
                                 "--no-coverage", "--progress", "never", "--known", str(known),
                                 "--out", str(tmp_path / "out"))
    assert status == 0, stderr
    assert f"  gone: f00dfeed (MUST TOOL-01 tool {visible(NAME)} broke)" in stdout
    assert_safe(stdout, "stdout")
    assert_no_forged_line(stdout, "stdout")


def test_the_pytest_plugin_shows_a_violation_escaped() -> None:
    from mcp_tempest.fuzz.oracle.model import Violation
    from mcp_tempest.fuzz.pytest_plugin import violation_line

    line = violation_line(Violation("TOOL-03", "MUST", f"tool {NAME} answered isError", ERROR, "tools/call"))
    assert line == f"MUST TOOL-03: tool {visible(NAME)} answered isError"
    assert_safe(line, "violation line")
