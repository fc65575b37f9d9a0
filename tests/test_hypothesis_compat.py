"""The Hypothesis internals fuzz/hypothesis_compat.py relies on still exist and still work.

Runs on whatever Hypothesis is installed (CI: the newest allowed, and the lowest in .venv-lowest),
so a Hypothesis release that renames one fails here, by name, and not as a campaign that never
stops shrinking or shares one database key across targets.
"""

from __future__ import annotations

import hypothesis
from hypothesis.internal.conjecture import engine

from fuzz import hypothesis_compat as compat


def test_every_internal_we_use_still_works():
    problems = compat.check_internals()
    assert problems == [], f"Hypothesis {hypothesis.__version__} changed internals mcp-gauntlet uses: {problems}"


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
