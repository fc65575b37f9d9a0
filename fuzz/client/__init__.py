"""Client mode: mcp-tempest plays a scripted, sometimes hostile server and judges MCP clients.

A case (`case.ClientCase`) is a scripted server behaviour drawn by Hypothesis (`behaviours`);
`script.ScriptedServer` plays it, over stdio inside the `{server}` command the client launches
(`stub`) or over loopback Streamable HTTP (`http_server`); `runner` runs the client once per
case and turns what crossed the wire, plus what the client printed it understood, into one
`targets.transcript.Transcript`; `fuzz.oracle.client_rules` judges it; `campaign` shrinks,
files findings and writes the same reports as a server campaign. Kept light: the stub imports
this package on every spawn, so nothing here imports Hypothesis at module level.
"""
