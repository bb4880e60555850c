"""The MCP face of the reference host: `forgec mcp serve` (see `forgec.mcp.server`).

Importing this package imports nothing heavy; the `mcp` SDK is loaded only by the server.
"""
