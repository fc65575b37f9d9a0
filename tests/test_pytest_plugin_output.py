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


def test_every_registered_property_has_a_suite_test():
    import fuzz.properties.suite as suite
    from fuzz.properties.base import all_properties

    missing = [name for name in all_properties() if not callable(getattr(suite, f"test_{name}", None))]
    assert missing == [], f"add test_<name> to fuzz/properties/suite.py for: {missing}"
