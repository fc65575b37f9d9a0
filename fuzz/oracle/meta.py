"""DIGEST section 2 and 5: the per-request `_meta`, capabilities and versions (META-*, DISC-08)."""

from __future__ import annotations

from typing import Any

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair, dual_era_excuses
from mcp_tempest.fuzz.oracle.facts import (
    KNOWN_VERSIONS,
    METHOD_CAPABILITY,
    MODERN_METHODS,
    SPEC_REJECTION_CODES,
    describe,
    header,
    is_legacy_version,
    is_modern_version,
)
from mcp_tempest.fuzz.oracle.http import header_defects
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.targets import wire

INPUT_KIND_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def surely_unsupported(x: Exchange, version: Any) -> bool:
    """Whether a version string certainly is not one this server implements.

    With a DiscoverResult in the transcript its supportedVersions decide. Without one, only
    strings that are no MCP version at all, or pre-modern dates that never were a release, count:
    a future date may be a version a newer server implements.
    """
    if not isinstance(version, str):
        return False
    if x.supported_versions is not None:
        return version not in x.supported_versions
    if version in KNOWN_VERSIONS:
        return False
    return not (is_modern_version(version) or is_legacy_version(version)) or version < wire.MODERN_VERSION


def method_may_be_unknown(x: Exchange, method: str | None) -> bool:
    """Whether -32601 could be the right answer for `method` on this server (DISC-07)."""
    if method not in MODERN_METHODS:
        return True
    if method == "server/discover":
        return False  # DISC-01: every server implements it
    if method in ("resources/templates/list", "resources/subscribe", "resources/unsubscribe"):
        return True  # optional within the resources capability: no rule says they exist
    capability = METHOD_CAPABILITY.get(method)
    if capability is None:
        return method == "subscriptions/listen"
    advertised = x.advertised(capability)
    return advertised is not True


PARAM_LOOKUP_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})
#: The requests 2026-07-28 added (the two schemas' ClientRequest methods compared): a 2025-era
#: reading does not know them.
ADDED_IN_2026 = frozenset({"server/discover", "subscriptions/listen"})


def defect_codes(x: Exchange, pair: Pair) -> set[int]:
    """Error codes some defect of this request other than the probed one could legitimately draw.

    DIGEST 2 (last paragraph): with several defects, any listed error matching one of them is
    fine. The oracle cannot see every defect (is this tool name known?), so this is the set of
    codes it cannot rule out: a wrong code outside it is still reported.
    """
    sent = pair.sent
    codes: set[int] = set()
    if not sent.envelope_ok or not sent.id_readable:
        codes |= {wire.INVALID_REQUEST, wire.PARSE_ERROR}
    if method_may_be_unknown(x, sent.method) or (x.dual and not sent.modern and sent.method in ADDED_IN_2026):
        # (a dual-era server may read a frame without a 2026-07-28 claim by 2025 rules, where the
        # method does not exist: a frame malformed in every era, judged there, has that defect too)
        codes.add(wire.METHOD_NOT_FOUND)
    if sent.version_missing or sent.caps_missing or not isinstance(sent.caps, dict) \
            or not isinstance(sent.version, str) or sent.method in PARAM_LOOKUP_METHODS \
            or (sent.params is not None and "cursor" in sent.params) or _params_invalid(pair):
        codes.add(wire.INVALID_PARAMS)
    if sent.method in wire.INPUT_REQUIRED_METHODS:
        codes.add(wire.MISSING_CLIENT_CAPABILITY)
    if not sent.version_missing and (not isinstance(sent.version, str) or surely_unsupported(x, sent.version)
                                     or (x.supported_versions is None and sent.version != wire.MODERN_VERSION)):
        codes.add(wire.UNSUPPORTED_PROTOCOL_VERSION)
    if x.transport.http_semantics and (header_defects(pair) or sent.version_missing):
        codes.add(wire.HEADER_MISMATCH)
    return codes


def _params_invalid(pair: Pair) -> bool:
    """Whether the request fails its method's request schema (then -32602 is a fair answer)."""
    from mcp_tempest.fuzz.oracle.schemas import request_validator

    if pair.method is None or not isinstance(pair.sent.message, dict):
        return False
    validate = request_validator(pair.method)
    return validate is not None and bool(validate(pair.sent.message))


def _missing(pair: Pair) -> list[str]:
    sent = pair.sent
    missing = []
    if sent.version_missing:
        missing.append("protocolVersion")
    if sent.caps_missing:
        missing.append("clientCapabilities")
    return missing


@rule("META-04", "MUST", "a request missing protocolVersion or clientCapabilities gets -32602 (HTTP 400)")
def meta_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    legacy_read = set(x.memo.get("legacy_read", ()))
    for pair in x.pairs:
        sent = pair.sent
        if dual_era_excuses(x, pair) is not None:
            continue  # the dual-era policy: such a server may read this frame as 2025-era traffic
        if pair.index in legacy_read:
            # No version claim, served by 2025-era rules, by a server not known to serve both
            # eras: a heuristic (VER-05 names only initialize as the legacy opener).
            i = next(i for i, said in x.answers(pair) if said.kind == "result")
            out.append(Violation("META-04", "HEURISTIC", "request without _meta protocolVersion was served by "
                                 "2025-era rules", "a result without resultType; a 2026-07-28 reading is -32602",
                                 pair.method, i))
            continue
        if sent.kind != "request" or not sent.envelope_ok or not sent.id_readable or sent.legacy:
            continue
        missing = _missing(pair)
        if not missing:
            continue
        what = "request without _meta " + " and ".join(missing)
        allowed = {wire.INVALID_PARAMS}
        if x.transport.http_semantics and (
            header_defects(pair)
            or (sent.version_missing and header(pair.headers, "MCP-Protocol-Version") is not None)
        ):
            allowed.add(wire.HEADER_MISMATCH)  # §18.3
        if method_may_be_unknown(x, sent.method):
            allowed.add(wire.METHOD_NOT_FOUND)
        if not sent.version_missing and (
            not isinstance(sent.version, str) or surely_unsupported(x, sent.version)
            or (x.supported_versions is None and sent.version != wire.MODERN_VERSION)
        ):
            allowed.add(wire.UNSUPPORTED_PROTOCOL_VERSION)
        if not sent.caps_missing:
            allowed.add(wire.MISSING_CLIENT_CAPABILITY)
        for i, said in x.answers(pair):
            if said.kind == "result":
                out.append(Violation("META-04", "MUST", f"{what} was served", "expected error -32602",
                                     pair.method, i))
            elif said.kind == "error":
                code = said.code
                status = x.events[i].status
                if code not in allowed:
                    out.append(Violation("META-04", "MUST", f"{what} answered with {code}, not -32602",
                                         f"acceptable here: {sorted(allowed)}", pair.method, i))
                elif code == wire.INVALID_PARAMS and status is not None and status != 400:
                    out.append(Violation("META-04", "MUST", f"-32602 for missing _meta sent with HTTP {status}",
                                         "expected 400", pair.method, i))
    return out


@rule("META-05", "MUST", "-32021 carries data.requiredCapabilities (an object) and HTTP 400")
def meta_05(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said in x.said.items():
        if said.code != wire.MISSING_CLIENT_CAPABILITY:
            continue
        pair = x.pair_at.get(x.answer_of.get(i, -1))
        if pair is not None and pair.sent.legacy:
            continue
        method = pair.method if pair else None
        data = said.error.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("requiredCapabilities"), dict):
            out.append(Violation("META-05", "MUST", "-32021 without data.requiredCapabilities",
                                 f"data is {describe(data)}", method, i))
        status = x.events[i].status
        if x.transport.http_semantics and status is not None and status != 400:
            out.append(Violation("META-05", "MUST", f"-32021 sent with HTTP {status}, not 400", "", method, i))
    return out


@rule("META-06", "MUST", "an unsupported version gets -32022 with data.supported and data.requested (HTTP 400)")
def meta_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said in x.said.items():
        if said.code != wire.UNSUPPORTED_PROTOCOL_VERSION:
            continue
        pair = x.pair_at.get(x.answer_of.get(i, -1))
        if pair is not None and pair.sent.legacy:
            continue
        method = pair.method if pair else None
        data = said.error.get("data")
        problems = []
        if not isinstance(data, dict):
            problems.append(f"data is {describe(data)}")
        else:
            supported = data.get("supported")
            if not isinstance(supported, list) or not all(isinstance(v, str) for v in supported):
                problems.append(f"data.supported is {describe(supported)}")
            if not isinstance(data.get("requested"), str):
                problems.append(f"data.requested is {describe(data.get('requested'))}")
        if problems:
            out.append(Violation("META-06", "MUST", "-32022 without data.supported[] and data.requested",
                                 "; ".join(problems), method, i))
        status = x.events[i].status
        if x.transport.http_semantics and status is not None and status != 400:
            out.append(Violation("META-06", "MUST", f"-32022 sent with HTTP {status}, not 400", "", method, i))
    for pair in x.pairs:
        sent = pair.sent
        if sent.kind != "request" or not sent.id_readable or sent.legacy_context \
                or not surely_unsupported(x, sent.version):
            continue
        for i, said in x.answers(pair):
            if said.kind == "result":
                out.append(Violation("META-06", "MUST", f"request with unsupported version {sent.version!r} was served",
                                     "expected error -32022", pair.method, i))
            elif said.kind == "error" and said.code not in SPEC_REJECTION_CODES:
                out.append(Violation("META-06", "MUST", f"unsupported version answered with {said.code}",
                                     "expected -32022 (or another listed error)", pair.method, i))
    return out


def _input_kinds(result: Any) -> list[tuple[str, Any]]:
    requests = result.get("inputRequests") if isinstance(result, dict) else None
    if not isinstance(requests, dict):
        return []
    return [(k, v) for k, v in requests.items() if isinstance(v, dict) and isinstance(v.get("method"), str)]


def _call_key(pair: Pair) -> tuple[str | None, str | None]:
    params = pair.sent.params or {}
    name = params.get("name") if isinstance(params.get("name"), str) else params.get("uri")
    return pair.method, name if isinstance(name, str) else None


@rule("META-02", "MUST", "capabilities are never inferred from earlier requests", scope="transcript")
def meta_02(x: Exchange) -> list[Violation]:
    """Inheritance shows only against a baseline: the same call, on a process where no request had
    declared the capability, was not asked for that kind of input. Without one the server may ask
    whatever was declared (MRTR-05 reports that on its own), and blaming an earlier request would
    name the wrong bug."""
    out: list[Violation] = []
    declared_before: dict[int, set[str]] = {}
    withheld: set[tuple[tuple[str | None, str | None], str]] = set()  # (call, capability) seen refused
    suspects: list[tuple[Pair, int, str, str, str]] = []
    for pair in x.pairs:
        sent = pair.sent
        if sent.kind != "request" or not sent.modern:
            continue
        earlier = declared_before.setdefault(pair.proc, set())
        mine = set(sent.capabilities)
        asked: set[str] = set()
        for i, said in x.answers(pair):
            if said.kind != "result" or said.result_type != "input_required" or not isinstance(sent.caps, dict):
                continue
            for key, request in _input_kinds(said.result):
                needed = INPUT_KIND_CAPABILITY.get(request["method"])
                if needed:
                    asked.add(needed)
                if needed and needed not in mine and needed in earlier:
                    suspects.append((pair, i, key, request["method"], needed))
        if pair.responses and isinstance(sent.caps, dict):
            for capability in INPUT_KIND_CAPABILITY.values():
                if capability not in mine and capability not in earlier and capability not in asked:
                    withheld.add((_call_key(pair), capability))
        earlier.update(mine)
    for pair, i, key, method, needed in suspects:
        if (_call_key(pair), needed) not in withheld:
            continue
        out.append(Violation(
            "META-02", "MUST", f"asked for {method} using a capability from an earlier request",
            f"input request {key!r}: this request did not declare {needed!r}, an earlier one on the same "
            "process did; the same call without that history was not asked", pair.method, i))
    return out


@rule("META-07", "SHOULD", "every result carries _meta serverInfo, unless the server is configured not to",
      scope="transcript")
def meta_07(x: Exchange) -> list[Violation]:
    """Only an inconsistent server is reported: the official examples show results without
    serverInfo (a server MAY be configured not to send it), so its absence alone proves nothing;
    a server that sends it on some results and not on others is not configured off."""
    with_info: int | None = None
    without: list[tuple[Pair, int]] = []
    for pair in x.pairs:
        if not pair.sent.modern:
            continue
        for i, said in x.answers(pair):
            result = said.result
            if said.kind != "result" or not isinstance(result, dict):
                continue
            meta = result.get("_meta")
            if isinstance(meta, dict) and wire.META_SERVER_INFO in meta:
                with_info = i if with_info is None else with_info
            else:
                without.append((pair, i))
    if with_info is None:
        return []
    out: list[Violation] = []
    reported: set[str | None] = set()
    for pair, i in without:
        if pair.method not in reported:
            reported.add(pair.method)
            out.append(Violation("META-07", "SHOULD", "result without _meta serverInfo",
                                 f"the server sent serverInfo elsewhere (event {with_info}), so it is not "
                                 "configured off", pair.method, i))
    return out


@rule("DISC-08", "HEURISTIC", "versions served, -32022.data.supported and supportedVersions agree")
def disc_08(x: Exchange) -> list[Violation]:
    if x.supported_versions is None:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        sent = pair.sent
        if sent.legacy_context:
            continue
        for i, said in x.answers(pair):
            if said.code == wire.UNSUPPORTED_PROTOCOL_VERSION:
                data = said.error.get("data")
                supported = data.get("supported") if isinstance(data, dict) else None
                if isinstance(supported, list) and set(supported) != set(x.supported_versions):
                    out.append(Violation("DISC-08", "HEURISTIC", "-32022 data.supported differs from supportedVersions",
                                         f"{sorted(map(str, supported))} vs {sorted(x.supported_versions)}",
                                         pair.method, i))
                if isinstance(sent.version, str) and sent.version in x.supported_versions \
                        and not header_defects(pair):
                    out.append(Violation("DISC-08", "HEURISTIC", f"-32022 for advertised version {sent.version!r}",
                                         "the version is listed in supportedVersions", pair.method, i))
    return out
