"""Answering a server's `inputRequests` the way a client would, or wrongly on purpose.

A binding with transform "answers" calls `answer_input_requests(inputRequests, policy)` when the
retry is built, against the live round's requests, so a replay answers what the fresh target
asked, not what the original one did.

Policies (`policy["mode"]`):
  accept         a well-formed answer to every request (forms filled from requestedSchema)
  decline/cancel elicitations declined or cancelled; other kinds answered normally
  drop           one answer left out (`policy["index"]` picks which): the server SHOULD ask again
  extra          a well-formed answer plus an unknown key, which the server SHOULD ignore
  wrong-shape    one answer replaced by a value of the wrong shape: a protocol error is expected
  wrong-key      every answer keyed by a name the server did not ask (responses-wrong-key)
"""

from __future__ import annotations

from typing import Any

from mcp_tempest.fuzz.properties.surface import sample_value

ACCEPT = "accept"


def answer_one(request: Any, mode: str = ACCEPT) -> Any:
    """A well-formed InputResponse for one InputRequest (ElicitResult, CreateMessageResult, ListRootsResult)."""
    method = request.get("method") if isinstance(request, dict) else None
    params = request.get("params") if isinstance(request, dict) and isinstance(request.get("params"), dict) else {}
    if method == "elicitation/create":
        if mode in ("decline", "cancel"):
            return {"action": mode}
        if params.get("mode") == "url":
            return {"action": "accept"}
        schema = params.get("requestedSchema") if isinstance(params.get("requestedSchema"), dict) else {}
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        content = {name: _form_value(sub) for name, sub in props.items()}
        return {"action": "accept", "content": content}
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "tempest"}, "model": "mcp-tempest",
                "stopReason": "endTurn"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///tmp/mcp-tempest", "name": "tempest"}]}
    return {}


def _form_value(schema: Any) -> Any:
    value = sample_value(schema)
    if isinstance(value, str | int | float | bool) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    return "tempest"


def answer_input_requests(requests: Any, policy: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(requests, dict):
        return {}
    mode = str(policy.get("mode", ACCEPT))
    keys = sorted(requests)
    answers = {key: answer_one(requests[key], mode) for key in keys}
    pick = keys[int(policy.get("index", 0)) % len(keys)] if keys else None
    if mode == "drop" and pick is not None:
        answers.pop(pick, None)
    elif mode == "extra":
        answers["mcp-tempest-unknown-key"] = {"action": "accept", "content": {}}
    elif mode == "wrong-shape" and pick is not None:
        answers[pick] = policy.get("value", {"action": 42})
    elif mode == "wrong-key":
        renamed: dict[str, Any] = {}
        for key, value in answers.items():
            new = "x-" + key
            while new in requests or new in renamed:
                new = "x-" + new
            renamed[new] = value
        answers = renamed
    return answers
