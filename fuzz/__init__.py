"""mcp-gauntlet."""
