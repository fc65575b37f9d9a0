"""What a user reads when the plugin's suite fails: the server's bug, not the plugin's insides.

No repr with a memory address (`<... object at 0x7f...>`: differs per run, says nothing), no
frames from fuzz/pytest_plugin.py in the traceback. And every registered property has its test
in the suite, so a new property cannot silently never run under pytest or HypoFuzz.
"""

from __future__ import annotations

import re

from fuzz_support import reference_stdio
from test_fuzz_pytest_plugin import _run_suite


def test_a_failure_shows_no_addresses_and_no_plugin_frames(tmp_path):
    proc = _run_suite(tmp_path, reference_stdio(tmp_path / "db.sqlite3", "null-id-accepted"), "ids")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "RPC-04" in proc.stdout
    assert not re.search(r" at 0x[0-9a-f]+", proc.stdout), re.search(r".{80} at 0x[0-9a-f]+", proc.stdout)
    # Traceback entries ("path:line: in func", or the failing source listing) of the plugin.
    assert not re.search(r"pytest_plugin\.py:\d+: in |def check\(self, prop_name", proc.stdout)
    assert "McpSession('stdio:" in proc.stdout


def test_the_suite_has_one_hypothesis_test_per_registered_property():
    """Derived from the registry: exactly the registered properties, in campaign order, each a
    module-level Hypothesis test (what HypoFuzz collects) with its own example-database key, each
    after a plain test of its named probes (the campaign's coverage phase)."""
    from hypothesis.internal.reflection import function_digest

    import mcp_tempest.fuzz.properties.suite as suite
    from mcp_tempest.fuzz.properties.base import all_properties

    names = [f"test_{name}" for name in all_properties()]
    both = [n for name in names for n in (f"{name}_probes", name)]
    module_tests = [n for n in vars(suite) if n.startswith("test_")]
    assert module_tests == both and suite.__all__ == both
    assert not any(getattr(getattr(suite, f"{n}_probes"), "is_hypothesis_test", False) for n in names)
    tests = [getattr(suite, n) for n in names]
    assert all(t.is_hypothesis_test and t.__name__ == n and t.__module__ == suite.__name__
               for t, n in zip(tests, names, strict=True))
    assert all(t.__doc__ for t in tests)
    assert len({function_digest(t.hypothesis.inner_test) for t in tests}) == len(tests)
