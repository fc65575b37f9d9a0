"""Hostile MCP clients for client mode (`fuzz-client`): each a small stdlib script that does one
thing a careless or hostile client does, so the harness's bounds and ownership are tested on a
real process. Usage of each: `python tests/hostile_clients/NAME.py [MODE] {server}` (stdio)."""
