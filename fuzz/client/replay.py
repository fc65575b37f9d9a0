"""Replaying a client reproduction: the recorded case, served again to the client command.

`mcp-tempest replay FILE` hands a file whose case says `"mode": "client"` here. The client is
the one recorded in the file unless `--client` names another (the target of a client finding is
its client command). Judged by the same client rules, so "still fails" means what "failed" meant.
"""

from __future__ import annotations

from typing import Any

from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.fuzz.client.runner import ClientCommand, ClientCommandError


def is_client_repro(doc: dict[str, Any]) -> bool:
    return isinstance(doc.get("case"), dict) and doc["case"].get("mode") == "client"


def recorded_client_notice(doc: dict[str, Any], client: str | None) -> str | None:
    """The line printed before a recorded client command runs (None when --client names another):
    a shared client repro runs the command line it records, and the person replaying it is told."""
    from mcp_tempest.fuzz.safe_text import visible

    template = doc.get("target")
    if (client and client != template) or not isinstance(template, str) or not template:
        return None
    return visible(f"replay: running the recorded client: {template}; pass --client CMD to replay against another")


def replay_client_document(doc: dict[str, Any], *, client: str | None, timeout: float | None) -> Any:
    """Play and judge one client reproduction; raises fuzz.replay.ReplayUsageError when it cannot."""
    from mcp_tempest.fuzz.client.campaign import replay_case
    from mcp_tempest.fuzz.replay import ReplayOutcome, ReplayUsageError, recorded_signature

    template = client or doc.get("target")
    if not isinstance(template, str) or not template:
        raise ReplayUsageError("the file names no client command; pass --client")
    try:
        command = ClientCommand.parse(template)
        case = ClientCase.from_json(doc["case"])
    except (ClientCommandError, KeyError, TypeError, ValueError) as exc:
        raise ReplayUsageError(f"the file's client case cannot be used: {exc}") from None
    try:
        transcript, violations = replay_case(command, case, timeout=max(timeout or 0.0, 20.0))
    except ClientCommandError as exc:
        raise ReplayUsageError(str(exc)) from None
    if not any(e.proc > 0 for e in transcript.events):
        raise ReplayUsageError(f"the client {command.template!r} could not run: it never started its server")
    return ReplayOutcome(str(doc.get("id") or "reproduction"), doc.get("rule"), command.template, violations,
                         transcript, recorded=recorded_signature(doc), mutation=doc.get("mutation"))
