"""The oracle: one pure function per DIGEST rule, judging a recorded exchange.

    from mcp_tempest.fuzz.oracle import judge, judge_response, Expectation, RULES
    violations = judge(transcript, era="modern", expectations={send_index: Expectation(...)})

Pure code: no I/O, no processes, no asyncio, no locust; safe to import from Locust users.
Each rule module is named after the DIGEST section it covers: framing (RPC-*), meta (META-*,
DISC-08), results (RT-*, CACHE-*, DISC-01/04/07), primitives (TOOL-02, TOOL-11, PR-01), mrtr
(MRTR-*), stdio (STDIO-*, RPC-02), stateless (SL-2), http (HTTP-*, HDR-*, SL-10), errors (RES-04, ERR-*), expect
(caller expectations and liveness). `craft` builds small transcripts by hand.
"""

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair, build_exchange
from mcp_tempest.fuzz.oracle.model import (
    BOTH_ERAS,
    MODERN,
    RULES,
    Era,
    Expectation,
    Rule,
    Strength,
    Violation,
)
from mcp_tempest.fuzz.oracle.registry import OracleUsageError, judge, judge_response, rules_for
from mcp_tempest.fuzz.oracle.schemas import warm_up

__all__ = [
    "BOTH_ERAS", "MODERN", "RULES", "Era", "Exchange", "Expectation", "OracleUsageError", "Pair", "Rule",
    "Strength", "Violation", "build_exchange", "judge", "judge_response", "rules_for", "warm_up",
]
