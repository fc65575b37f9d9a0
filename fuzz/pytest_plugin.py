"""mcp-tempest's pytest plugin: `--mcp-target`, and the fixtures the property suite runs on.

Registered through the `pytest11` entry point, so installing mcp-tempest is enough:

    pytest --pyargs mcp_tempest.fuzz.properties.suite --mcp-target "stdio:python my_server.py"

runs every property as an ordinary Hypothesis test (so HypoFuzz can run them too), and a
user's own tests can take the `mcp_session` fixture and call `mcp_session.check("ids", data)`.
Without `--mcp-target` (or MCP_TEMPEST_TARGET) the target is the built-in reference server.

`--mcp-fail-on must|should|heuristic` (default should) is the campaign's `--fail-on`: a test
fails on a violation at or above it; weaker ones are observations, reported as pytest warnings
(McpObservation) so they are seen without failing the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from mcp_tempest.fuzz.safe_text import visible

if TYPE_CHECKING:
    from mcp_tempest.fuzz.oracle.model import Violation

TARGET_ENV = "MCP_TEMPEST_TARGET"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-tempest")
    group.addoption("--mcp-target", default=None, metavar="TARGET",
                    help="MCP server under test: stdio:<command>, http://127.0.0.1:PORT/PATH or "
                         "http+spawn:<command with {port}> (default: env MCP_TEMPEST_TARGET, else the "
                         "built-in reference server)")
    group.addoption("--mcp-timeout", default=5.0, type=float, metavar="SECONDS",
                    help="how long the properties wait for each answer (default 5)")
    from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, FAIL_ON_CHOICES

    group.addoption("--mcp-fail-on", default=DEFAULT_FAIL_ON, choices=FAIL_ON_CHOICES, metavar="STRENGTH",
                    help="the weakest strength that fails a test: must, should or heuristic (default should); "
                         "weaker violations are reported as warnings")


def pytest_configure(config: pytest.Config) -> None:
    """Under HypoFuzz: fuzz even where CI=true made Hypothesis derandomize, and let the hub see
    our (slow, process-spawning) tests from the start, on every Hypothesis we support."""
    from mcp_tempest.fuzz.hypothesis_compat import (
        alias_slice_comments,
        fuzzable_profile_under_hypofuzz,
        in_hypofuzz_run,
        publish_hypofuzz_targets_early,
    )

    if in_hypofuzz_run():
        alias_slice_comments()
    fuzzable_profile_under_hypofuzz()
    publish_hypofuzz_targets_early()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Key each property test's example database by its pytest node id, as HypoFuzz does.

    Why: HypoFuzz saves what it finds in the shared Hypothesis database under a key that includes
    the node id; Hypothesis' own plugin adds the node id only for parametrized tests. With the same
    key here, the next plain `pytest` run from the same directory replays HypoFuzz's failures first."""
    from mcp_tempest.fuzz.hypothesis_compat import set_database_key

    for item in items:
        test = getattr(item, "obj", None)
        # pytest's default import mode names the module by its folders with an __init__.py, and
        # the mcp_tempest namespace has none: it is `fuzz.properties.suite` there, ours everywhere else
        module = str(getattr(test, "__module__", "") or "")
        if module.endswith("fuzz.properties.suite") and getattr(test, "is_hypothesis_test", False):
            set_database_key(test.hypothesis.inner_test, item.nodeid.encode())


def target_from(config: pytest.Config) -> str | None:
    """The target the user asked for, or None for the built-in reference server."""
    try:
        given = config.getoption("--mcp-target")
    except ValueError:
        given = None
    if not given:
        from mcp_tempest.targets import renamed

        renamed.adopt_old_environment(os.environ)
    return given or os.environ.get(TARGET_ENV) or None


class McpObservation(UserWarning):
    """A violation below --mcp-fail-on: shown in pytest's warnings summary, not a failure."""


class McpSession:
    """One target for a whole pytest session: probed once, processes pooled across tests."""

    def __init__(self, target: str | None, *, timeout: float = 5.0, fail_on: str = "should") -> None:
        from mcp_tempest.fuzz.campaign import UnusableTarget, prepare_target
        from mcp_tempest.targets.endpoints import open_endpoint
        from mcp_tempest.targets.target_spec import TargetError, parse_target

        try:
            spec = parse_target(target)
            self.prepared = prepare_target(spec, timeout=timeout)
        except (TargetError, UnusableTarget) as exc:
            raise pytest.UsageError(f"mcp-tempest: unusable target: {visible(exc)}") from None
        self.spec = spec
        self.timeout = timeout
        self.fail_on = fail_on
        self.ctx = self.prepared.context()
        self.endpoint = open_endpoint(spec, timeout=max(timeout, 5.0))

    def __repr__(self) -> str:  # shown in failures and Hypothesis' falsifying example: no address
        return f"McpSession({self.spec.text!r})"

    def check(self, prop_name: str, data: Any) -> None:
        """Draw one case of the property, play it, and fail with the violations and transcript."""
        __tracebackhide__ = True  # the failure is the server's: pytest shows the test, not this plugin
        from mcp_tempest.fuzz.properties.base import all_properties
        from mcp_tempest.fuzz.properties.executor import execute
        from mcp_tempest.fuzz.properties.judging import judge_run, primary
        from mcp_tempest.fuzz.reports import render_transcript_text

        prop = all_properties()[prop_name]
        reason = prop.applicable(self.ctx)
        if reason is not None:
            pytest.skip(f"{prop_name}: {reason}")
        self.endpoint.prepare(prop.fresh_per_example)
        case = data.draw(prop.cases(self.ctx), label="case")
        run = execute(case, self.endpoint, reuse=True, timeout=self.timeout)
        violations = self.observe(judge_run(prop, run, self.ctx))
        if violations:
            self.endpoint.discard_warm()
            main = primary(violations, run)
            lines = [violation_line(main), visible(main.detail), "", "violations:"]
            lines += [f"  {violation_line(v)} {visible(v.detail)}" for v in violations]
            lines += ["", "transcript:", *map(visible, render_transcript_text(run.transcript.to_json()))]
            raise AssertionError("\n".join(lines))

    def check_probes(self, prop_name: str) -> None:
        """The property's coverage phase, as a campaign's begins: every named probe once, in order
        (Hypothesis' random cases seldom draw them: the era lock, a foreign Origin); fails with
        every probe that broke a rule at or above --mcp-fail-on, each with its first violation,
        and the first one's transcript."""
        __tracebackhide__ = True
        from mcp_tempest.fuzz.properties.base import all_properties
        from mcp_tempest.fuzz.properties.executor import execute
        from mcp_tempest.fuzz.properties.judging import judge_run, primary
        from mcp_tempest.fuzz.reports import render_transcript_text

        prop = all_properties()[prop_name]
        reason = prop.applicable(self.ctx)
        if reason is not None:
            pytest.skip(f"{prop_name}: {reason}")
        self.endpoint.prepare(prop.fresh_per_example)
        probes = [p for p in prop.coverage(self.ctx) if p.case is not None]
        if not probes:
            pytest.skip(f"{prop_name}: no probe applies to this target")
        failed: list[str] = []
        transcript: list[str] = []
        for p in probes:
            run = execute(p.case, self.endpoint, reuse=True, timeout=self.timeout)
            violations = self.observe(judge_run(prop, run, self.ctx))
            if violations:
                main = primary(violations, run)
                failed.append(f"  probe {p.name}: {violation_line(main)}")
                if not transcript:
                    transcript = ["", f"transcript of probe {p.name}:",
                                  *map(visible, render_transcript_text(run.transcript.to_json()))]
        if failed:
            raise AssertionError("\n".join([f"{len(failed)} of {len(probes)} probes failed:", *failed, *transcript]))

    def observe(self, violations: list[Violation]) -> list[Violation]:
        """The violations that fail the test (at or above --mcp-fail-on); each weaker one becomes
        an McpObservation warning."""
        import warnings

        from mcp_tempest.fuzz.findings import strength_rank

        if violations:
            self.endpoint.discard_warm()  # it took part in a violation: the next case starts clean
        failing = [v for v in violations if strength_rank(v.strength) <= strength_rank(self.fail_on.upper())]
        for v in violations:
            if v not in failing:
                warnings.warn(McpObservation(f"{violation_line(v, probe=False)} (below --mcp-fail-on "
                                             f"{self.fail_on})"), stacklevel=3)
        return failing

    def close(self) -> None:
        self.endpoint.close()


@pytest.fixture(scope="session")
def mcp_target(request: pytest.FixtureRequest) -> str | None:
    """The `--mcp-target` text (None: the built-in reference server)."""
    return target_from(request.config)


@pytest.fixture(scope="session")
def mcp_session(request: pytest.FixtureRequest) -> Iterator[McpSession]:
    """A probed target with pooled processes, shared by every property test of the session."""
    try:
        timeout = float(request.config.getoption("--mcp-timeout"))
    except ValueError:
        timeout = 5.0
    try:
        fail_on = str(request.config.getoption("--mcp-fail-on"))
    except ValueError:
        fail_on = "should"
    session = McpSession(target_from(request.config), timeout=timeout, fail_on=fail_on)
    try:
        yield session
    finally:
        session.close()


def violation_line(v: Violation, *, probe: bool = True) -> str:
    """`STRENGTH RULE: title (probe ...)` for pytest's output. A title may quote the server (a
    tool's name, an error message): shown escaped (fuzz/safe_text.py), so it cannot clear the
    terminal or forge a line of the test report."""
    return f"{v.strength} {v.rule}: {visible(v.title)}{_probe_note(v) if probe else ''}"


def _probe_note(v: Violation) -> str:
    """How the fuzzer provoked a violation: the probe and the rule that probe frame breaks."""
    return f" (probe {v.probe}, which breaks {v.probe_rule})" if v.probe_rule else ""
