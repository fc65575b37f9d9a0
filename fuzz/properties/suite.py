"""The properties as plain pytest + Hypothesis tests, for users' suites and for HypoFuzz.

    pytest --pyargs mcp_tempest.fuzz.properties.suite --mcp-target "stdio:python my_server.py"

Two tests per registered property (`base.all_properties()`), made here in a loop, so a new
property module is new tests with no edit to this file; they are the phases a campaign runs:
`test_<property>_probes` plays each of the property's named probes once (the coverage phase),
and `test_<property>` is a real module-level Hypothesis test (what pytest and HypoFuzz collect):
it draws one case per example with `st.data()` (the cases depend on what the target offers,
learned when the session starts), plays it and fails with the violations and the transcript;
Hypothesis' example database replays its earlier failures first. Example counts come from the active
Hypothesis profile (`--hypothesis-profile`). `from fuzz.properties.suite import *` in another
test module collects them there too.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_tempest.fuzz.hypothesis_compat import set_database_key
from mcp_tempest.fuzz.properties.base import all_properties
from mcp_tempest.fuzz.pytest_plugin import McpSession, mcp_session, mcp_target  # noqa: F401 - fixtures, when the plugin is not loaded

_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                           HealthCheck.filter_too_much])


def _property_test(name: str, title: str) -> Callable[..., None]:
    """`test_<name>`: one property as a Hypothesis test taking the session-wide `mcp_session`."""

    def test(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811 - the fixture
        mcp_session.check(name, data)

    test.__name__ = test.__qualname__ = f"test_{name}"
    test.__doc__ = f"{title[:1].upper()}{title[1:]}."
    # Every generated test has the same source, which is what Hypothesis keys its example database
    # by: the property's name keeps one property's saved failures from replaying under another.
    set_database_key(test, f"mcp_tempest.fuzz.properties.suite:{name}".encode())
    return _SETTINGS(given(data=st.data())(test))


def _probes_test(name: str, title: str) -> Callable[..., None]:
    """`test_<name>_probes`: the property's coverage phase, every named probe once."""

    def test(mcp_session: McpSession) -> None:  # noqa: F811 - the fixture
        mcp_session.check_probes(name)

    test.__name__ = test.__qualname__ = f"test_{name}_probes"
    test.__doc__ = f"The named probes of: {title}."
    return test


__all__: list[str] = []
for _name, _prop in all_properties().items():
    globals()[f"test_{_name}_probes"] = _probes_test(_name, _prop.title)
    globals()[f"test_{_name}"] = _property_test(_name, _prop.title)
    __all__ += [f"test_{_name}_probes", f"test_{_name}"]
del _name, _prop
