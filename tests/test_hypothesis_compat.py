"""The Hypothesis internals fuzz/hypothesis_compat.py relies on still exist and still work.

Runs on whatever Hypothesis is installed (CI: the newest allowed, and the lowest in .venv-lowest),
so a Hypothesis release that renames one fails here, by name, and not as a campaign that never
stops shrinking or shares one database key across targets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis
from hypothesis.internal.conjecture import engine

from mcp_tempest.fuzz import hypothesis_compat as compat


def test_every_internal_we_use_still_works():
    problems = compat.check_internals()
    assert problems == [], f"Hypothesis {hypothesis.__version__} changed internals mcp-tempest uses: {problems}"


def test_shrink_time_limit_sets_and_restores_the_engine_constant():
    before = engine.MAX_SHRINKING_SECONDS
    with compat.shrink_time_limit(0.2):
        assert engine.MAX_SHRINKING_SECONDS == 1
    with compat.shrink_time_limit(7.9):
        assert engine.MAX_SHRINKING_SECONDS == 7
    assert engine.MAX_SHRINKING_SECONDS == before


def test_different_digests_give_different_database_keys_and_equal_ones_the_same():
    assert compat._database_keys(b"p|stdio|t") != compat._database_keys(b"p|http|t")
    assert compat._database_keys(b"p|stdio|t") == compat._database_keys(b"p|stdio|t")


def test_the_campaign_takes_its_internals_from_the_compat_module_only():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*root.glob("fuzz/**/*.py"), *root.glob("strategies/**/*.py"), *root.glob("targets/**/*.py")]:
        if path.name == "hypothesis_compat.py":
            continue
        text = path.read_text()
        for needle in ("hypothesis.internal", "_hypothesis_internal", "MAX_SHRINKING_SECONDS",
                       "from hypothesis.core import", "from hypothesis.control import"):
            if needle in text:
                offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []


def _with_profile(name: str, body: Callable[[], Any]) -> Any:
    """Run `body` with profile `name` loaded, then restore whatever profile was active."""
    from hypothesis import settings

    before = settings.default
    settings.register_profile("mcp-tempest-test-before", before)
    settings.load_profile(name)
    try:
        return body()
    finally:
        settings.load_profile("mcp-tempest-test-before")


def test_outside_hypofuzz_a_derandomized_profile_is_left_alone():
    from hypothesis import settings

    def body() -> tuple[str | None, bool]:
        return compat.fuzzable_profile_under_hypofuzz(), settings.default.derandomize

    assert _with_profile("ci", body) == (None, True)


def test_under_hypofuzz_the_ci_profile_becomes_random_with_a_database(monkeypatch):
    import pytest
    from hypothesis import settings

    detection = pytest.importorskip("hypofuzz.detection", reason="HypoFuzz is not installed")
    monkeypatch.setattr(detection, "_in_hypofuzz_run", True)

    def body() -> tuple[str | None, bool, object, object]:
        loaded = compat.fuzzable_profile_under_hypofuzz()
        return loaded, settings.default.derandomize, settings.default.database, settings.default.deadline

    loaded, derandomize, database, deadline = _with_profile("ci", body)
    assert loaded == compat.HYPOFUZZ_PROFILE and not derandomize and database is not None
    assert deadline is None  # the ci profile's other settings stay
    assert _with_profile("default", compat.fuzzable_profile_under_hypofuzz) is None  # already random


def test_the_utf8_table_of_a_fresh_folder_is_made_out_of_the_harness_process(tmp_path):
    """In a folder without `.hypothesis/` (a fresh checkout, a CI workspace) `st.text()` made
    Hypothesis try every code point in the harness: about 180 MB on top of a campaign. Primed,
    the table is made by a child and the harness only reads it; a second priming spawns nothing."""
    import subprocess
    import sys

    script = (
        "import time\n"
        "from mcp_tempest.fuzz.hypothesis_compat import prime_unicode_tables\n"
        "primed = prime_unicode_tables()\n"
        "t = time.monotonic(); again = prime_unicode_tables(); quick = time.monotonic() - t < 0.5\n"
        "from hypothesis import given, settings, strategies as st\n"
        "@settings(max_examples=5, database=None)\n"
        "@given(st.text())\n"
        "def t(s): pass\n"
        "t()\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so a child forked from a big
        # pytest worker would report the worker's size (442 MB in CI)
        "hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
        "print(primed, again, quick, int(hwm) // 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    primed, again, quick, peak_mb = done.stdout.split()
    assert (primed, again, quick) == ("True", "True", "True"), done.stderr[-2000:]
    assert list((tmp_path / ".hypothesis" / "unicode_data").glob("*/codec-*utf-8.json.gz"))
    assert int(peak_mb) < 120, peak_mb  # made in-process, this process peaked near 240 MB
