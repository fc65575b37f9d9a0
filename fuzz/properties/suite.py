"""The properties as plain pytest + Hypothesis tests, for users' suites and for HypoFuzz.

    pytest --pyargs fuzz.properties.suite --mcp-target "stdio:python my_server.py"

Each test draws one case per example with `st.data()` (the cases depend on what the target
offers, learned when the session starts), plays it and fails with the violations and the
transcript. Example counts come from the active Hypothesis profile (`--hypothesis-profile`).
Importing these names into another test module collects them there too.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.pytest_plugin import McpSession, mcp_session, mcp_target  # noqa: F401 - fixtures, when the plugin is not loaded

_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                           HealthCheck.filter_too_much])


@_SETTINGS
@given(data=st.data())
def test_framing(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """Malformed frames are answered or ignored as the rule says; the server lives on."""
    mcp_session.check("framing", data)


@_SETTINGS
@given(data=st.data())
def test_ids(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """Ids are never cross-wired; null and fractional ids are refused."""
    mcp_session.check("ids", data)


@_SETTINGS
@given(data=st.data())
def test_valid(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """Every valid frame is answered as the spec says."""
    mcp_session.check("valid", data)


@_SETTINGS
@given(data=st.data())
def test_history(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """Answers do not depend on what the process served before."""
    mcp_session.check("history", data)


@_SETTINGS
@given(data=st.data())
def test_lists(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """List results are the same on every process, whatever it served before."""
    mcp_session.check("lists", data)


@_SETTINGS
@given(data=st.data())
def test_handoff(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """An MRTR round-trip and a handle work across processes."""
    mcp_session.check("handoff", data)


@_SETTINGS
@given(data=st.data())
def test_mrtr(mcp_session: McpSession, data: st.DataObject) -> None:  # noqa: F811
    """MRTR conversations, right and wrong."""
    mcp_session.check("mrtr", data)
