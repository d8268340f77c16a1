-- MCP servers (app/store/mcp.py): each defined once, in Claude Desktop's shape without
-- the values of env and headers (those live in the keychain: only their names here);
-- turned on per workspace (no row: off); a per-tool policy per workspace (no row: ask).
CREATE TABLE mcp_server (
    name        TEXT PRIMARY KEY,
    config      TEXT NOT NULL,   -- JSON: command/args or url, other keys kept as given
    secret_keys TEXT NOT NULL DEFAULT '{"env": [], "headers": []}',
    imported    INTEGER NOT NULL DEFAULT 0 CHECK (imported IN (0, 1)),
    added_at    TEXT NOT NULL
);
CREATE TABLE workspace_mcp (
    workspace_id TEXT NOT NULL,
    server       TEXT NOT NULL REFERENCES mcp_server (name) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, server)
) WITHOUT ROWID;
CREATE TABLE mcp_tool_policy (
    workspace_id TEXT NOT NULL,
    server       TEXT NOT NULL REFERENCES mcp_server (name) ON DELETE CASCADE,
    tool         TEXT NOT NULL,
    policy       TEXT NOT NULL CHECK (policy IN ('ask', 'allow', 'off')),
    PRIMARY KEY (workspace_id, server, tool)
) WITHOUT ROWID;
