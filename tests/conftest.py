"""Shared test fixtures: where the official spec data is, and how its absence is treated.

The official files live in `../shared/spec/` beside the checkout and are never copied into the
project. In a user's clone they are absent and the tests that need them skip with a reason; under
CI (`CI=true`) their absence is a failure, because a skipped oracle test proves nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = PROJECT_ROOT.parent / "shared" / "spec"


def require_spec_dir() -> Path:
    """The official spec directory, or skip (fail under CI) when it is not beside the checkout."""
    if (SPEC_DIR / "2026-07-28" / "schema.json").is_file():
        return SPEC_DIR
    reason = f"official spec data not found at {SPEC_DIR} (expected ../shared/spec beside the checkout)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    return require_spec_dir()
