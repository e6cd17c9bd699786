"""``statevcs mcp``: a repository's history for any MCP client (the ``[mcp]`` extra).

:mod:`.queries` answers each tool as JSON-compatible data from the repository alone;
:mod:`.server` puts those answers on the official ``mcp`` SDK (stdio and streamable HTTP).
See ``docs/mcp.md``. Import :func:`statevcs.mcpserver.server.serve` to run one from code.
"""

from ..errors import require_module

require_module("the MCP server (statevcs mcp)", "mcp", "mcp")
