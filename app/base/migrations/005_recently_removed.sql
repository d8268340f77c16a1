-- Recently removed workspaces: the entry as it was, kept 30 days so that Restore can
-- bring it back with its identity.  What else only Cairn holds (knowledge, its history,
-- files) stays keyed by the old id until the purge.
CREATE TABLE removed_workspace (
    id            TEXT PRIMARY KEY,
    path          TEXT NOT NULL,
    path_key      TEXT NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    instructions  TEXT NOT NULL DEFAULT '',
    build_status  TEXT NOT NULL DEFAULT 'idea'
                  CHECK (build_status IN ('idea', 'planning', 'building', 'shipped')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    removed_at    TEXT NOT NULL
);
CREATE INDEX removed_workspace_removed_at ON removed_workspace(removed_at);

-- The chats it held, in their manual order: Restore re-attaches those still Ungrouped.
CREATE TABLE removed_membership (
    workspace_id  TEXT NOT NULL REFERENCES removed_workspace(id) ON DELETE CASCADE,
    chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, position)
);
