"""The MRTR-10 observation (catalogue row `state-missing`): a retry that leaves out the requestState
it was given, served anyway, is an observation only when the server needed that state.

A server may do without the state when the retry carries an answer to every question it asked
(MRTR-16: it goes on when the answers it needs are there); it needed the state when one of its
own inputRequests is still unanswered, asked in this round or in an earlier one whose answer
only the state carried. Crafted exchanges, judged with the row's own expectation, as the mrtr
property and `frames` send it; each firing case has a silent twin that differs in that one thing.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tempest.fuzz.oracle import Violation, judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.strategies import malformed as catalogue
from mcp_tempest.targets import wire

CAPS = {"elicitation": {}}
DISCOVER = {"resultType": "complete", "supportedVersions": [wire.MODERN_VERSION], "ttlMs": 0, "cacheScope": "public",
            "capabilities": {"tools": {}}}
DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}


def question(text: str) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": text,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}


ACCEPT = {"action": "accept", "content": {"ok": True}}


def call(rid: int, **params: Any) -> dict[str, Any]:
    return wire.build_request(rid, "tools/call", {"name": "ask", "arguments": {}, **params}, capabilities=CAPS)


def asks(*keys: str, state: str) -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": {k: question(k) for k in keys}, "requestState": state}


def judged(transport: str, rounds: list[tuple[dict[str, Any], dict[str, Any]]], retry: dict[str, Any],
           answer: dict[str, Any]) -> list[Violation]:
    """`rounds` played in order (request, result), then the state-missing `retry` answered with
    `answer`, then a sentinel; the retry carries the row's expectation."""
    c = Crafter(transport)
    c.spawn("http://127.0.0.1:1/mcp" if transport == "http" else "crafted")
    c.exchange(wire.build_request(0, "server/discover", {}), wire.build_result(0, DISCOVER))
    for request, result in rounds:
        c.exchange(request, wire.build_result(request["id"], result))
    sent, _ = c.exchange(retry, wire.build_result(retry["id"], answer))
    c.exchange(wire.build_request(99, "server/discover", {}), wire.build_result(99, DISCOVER))
    expect = catalogue.get_mutation("state-missing").expect.for_transport(transport)
    return judge(c.transcript, expectations={sent: expect})


def observations(found: list[Violation]) -> list[Violation]:
    return [v for v in found if v.probe == "state-missing"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_served_with_every_answer_the_server_asked_for_is_silent(transport: str) -> None:
    """The reported false positive: the answers are all there, so the state was not needed."""
    begin = call(1)
    retry = call(2, inputResponses={"q": ACCEPT})
    assert observations(judged(transport, [(begin, asks("q", state="s1"))], retry, DONE)) == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_served_with_a_question_unanswered_fires(transport: str) -> None:
    begin = call(1)
    for responses in ({}, {"other": ACCEPT}, {"q": ACCEPT}):  # none, a wrong key, one of two
        retry = call(2, inputResponses=responses)
        found = observations(judged(transport, [(begin, asks("q", "r", state="s1"))], retry, DONE))
        assert [(v.rule, v.strength, v.probe_rule) for v in found] == [("MRTR-10", "HEURISTIC", "MRTR-10")], responses
    assert observations(judged(transport, [(begin, asks("q", state="s1"))], call(2), DONE))  # no inputResponses at all


def test_an_earlier_round_answered_only_in_the_state_fires() -> None:
    """Round two asks `r`; `q` was answered in round one and only the state carries it. A retry of
    round two without the state but with `r` answered leaves `q` unanswered: the state was needed."""
    first = (call(1), asks("q", state="s1"))
    second = (call(2, requestState="s1", inputResponses={"q": ACCEPT}), asks("r", state="s2"))
    only_r = call(3, inputResponses={"r": ACCEPT})
    assert observations(judged("stdio", [first, second], only_r, DONE))
    both = call(3, inputResponses={"q": ACCEPT, "r": ACCEPT})
    assert observations(judged("stdio", [first, second], both, DONE)) == []


def test_asking_again_or_refusing_is_never_an_observation() -> None:
    begin = call(1)
    retry = call(2, inputResponses={})
    again = asks("q", state="s2")
    assert observations(judged("stdio", [(begin, asks("q", state="s1"))], retry, again)) == []
    c = Crafter("stdio")
    c.spawn()
    c.exchange(begin, wire.build_result(1, asks("q", state="s1")))
    sent, _ = c.exchange(retry, wire.build_error(2, wire.INVALID_PARAMS, "requestState missing"))
    c.exchange(wire.build_request(99, "server/discover", {}), wire.build_result(99, DISCOVER))
    expect = catalogue.get_mutation("state-missing").expect
    assert observations(judge(c.transcript, expectations={sent: expect})) == []


def test_a_retry_of_another_tool_is_not_this_round_trip() -> None:
    """The question belongs to tool `ask`; a state-missing frame for another tool continues no
    round-trip of the transcript, so nothing says a state was needed."""
    begin = call(1)
    other = wire.build_request(2, "tools/call", {"name": "other", "arguments": {}, "inputResponses": {}},
                               capabilities=CAPS)
    assert observations(judged("stdio", [(begin, asks("q", state="s1"))], other, DONE)) == []
