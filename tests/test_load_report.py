"""report.html in a real headless browser: the page renders, its charts are there and not empty.

One short run on the embedded reference server (with a gate and a baseline, so their verdicts
are on the page), then Debian's `chromium` dumps the DOM it built and takes a screenshot. CI
installs chromium (.ci/run); without it the browser checks are skipped, the page checks are not.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("load-report")
    # a baseline written by hand (an earlier, much slower run), so one load run is enough
    baseline = tmp / "baseline.json"
    baseline.write_text(json.dumps({"operations": {}, "overall": {"p50_ms": 900.0, "p99_ms": 1000.0}, "rps": 1.0}))
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--run-time", "4s", "--users", "3", "--out", str(tmp / "b"),
                           "--fail-on", "p99_ms>5000", "--baseline", str(baseline), "--progress-every", "0"],
                          cwd=tmp, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "b" / "report.html"


def test_the_page_is_self_contained_and_holds_every_section(report: Path) -> None:
    page = report.read_text()
    assert "<script" not in page and "<link" not in page and not re.search(r"(src|href)=", page)
    summary = json.loads((report.parent / "summary.json").read_text())
    for name in summary["operations"]:
        assert f"<td>{name}</td>" in page.replace("<td class=\"bad\">", "<td>"), name
    for section in ("MRTR operations as units", "Failures by kind", "Server memory", "Gates", "Baseline",
                    "latency over time", "percentile plot", "throughput over time", "server memory over time"):
        assert section in page, section
    assert len(page) < 200_000


def _png_pixels_vary(png: bytes) -> int:
    """How many distinct byte values the decompressed image data holds (a blank page: very few)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data = 8, b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(data)))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it in .ci/run)")
def test_headless_chromium_renders_non_empty_charts(report: Path, tmp_path: Path) -> None:
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120).stdout
    charts = re.findall(r"<svg[^>]*class=\"chart\".*?</svg>", dom, flags=re.S)
    assert len(charts) >= 4, dom[:2000]
    drawn = [c for c in charts if re.search(r'<path class="series" d="M[0-9.]+,[0-9.]+ L', c)]
    assert len(drawn) >= 4, [c[:300] for c in charts]  # latency, throughput, distribution, memory
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1100,2400", report.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert _png_pixels_vary(shot.read_bytes()) > 50
