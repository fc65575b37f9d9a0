"""A careless client: a request with a null id, requests without `_meta` (none at all, no
protocolVersion, no clientCapabilities), and two requests in flight under one id."""

import sys

import _peer

proc = _peer.start(sys.argv[1:])
_peer.send(proc, _peer.request(None, "tools/list"))
_peer.send(proc, _peer.request(2, "tools/list", meta=None))
_peer.send(proc, _peer.request(3, "prompts/list", meta={"io.modelcontextprotocol/clientCapabilities": {}}))
_peer.send(proc, _peer.request(4, "resources/list", meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28"}))
_peer.send(proc, _peer.request(5, "tools/list"))
_peer.send(proc, _peer.request(5, "prompts/list"))
for _ in range(5):
    _peer.read_one(proc)
print('{"step": "tools/list", "outcome": "complete", "resultType": "complete", "code": null}', flush=True)
