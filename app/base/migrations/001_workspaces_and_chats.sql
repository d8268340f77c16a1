CREATE TABLE workspace (
    id            TEXT PRIMARY KEY,
    path          TEXT NOT NULL,            -- canonical at creation, never rewritten
    path_key      TEXT NOT NULL,            -- de-duplication key (case, normal form)
    title         TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    instructions  TEXT NOT NULL DEFAULT '',
    build_status  TEXT NOT NULL DEFAULT 'idea'
                  CHECK (build_status IN ('idea', 'planning', 'building', 'shipped')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX workspace_path_key ON workspace(path_key);

-- The display order is its own record: smaller position shows first.
CREATE TABLE display_order (
    position      INTEGER PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspace(id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX display_order_workspace ON display_order(workspace_id);

CREATE TABLE chat (
    id            TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    folder        TEXT,                     -- as recorded, even when it does not resolve
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    archived_at   TEXT,
    pin_seq       INTEGER,                  -- larger = pinned more recently
    CHECK (archived_at IS NULL OR pin_seq IS NULL)
);
CREATE UNIQUE INDEX chat_pin ON chat(pin_seq) WHERE pin_seq IS NOT NULL;

-- A chat's place in its workspace's manual order: smaller position shows first.
CREATE TABLE membership (
    workspace_id  TEXT NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
    chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, position)
);
CREATE UNIQUE INDEX membership_chat ON membership(chat_id);

CREATE TABLE registry_state (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

-- Changes that span the database and the disk: written first, cleared last.
CREATE TABLE pending_change (
    id     INTEGER PRIMARY KEY,
    op     TEXT NOT NULL,
    args   TEXT NOT NULL
);
