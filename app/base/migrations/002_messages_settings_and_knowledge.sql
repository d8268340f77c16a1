-- What the person was typing and has not sent: kept across restarts and failures.
ALTER TABLE chat ADD COLUMN draft TEXT NOT NULL DEFAULT '';

CREATE TABLE message (
    id                  INTEGER PRIMARY KEY,
    chat_id             TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    role                TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content             TEXT NOT NULL,      -- JSON list of content blocks
    status              TEXT NOT NULL DEFAULT 'complete'
                        CHECK (status IN ('complete', 'stopped', 'failed')),
    error               TEXT,               -- the sentence shown for a failed turn
    model               TEXT,
    input_tokens        INTEGER,
    cache_write_tokens  INTEGER,
    cache_read_tokens   INTEGER,
    output_tokens       INTEGER,
    cost_usd            REAL,
    created_at          TEXT NOT NULL
);
CREATE INDEX message_chat ON message(chat_id, id);

CREATE TABLE setting (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL                    -- JSON; never a secret (those live in keyring)
);

-- One knowledge document per workspace, and 'personal' for personal memory.  Not tied
-- to the workspace row by a foreign key: removing a workspace never deletes what the
-- person or the rebuild wrote.
CREATE TABLE knowledge (
    owner       TEXT PRIMARY KEY,
    text        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    updated_at  TEXT NOT NULL,
    source      TEXT NOT NULL,              -- user | rebuild | import | restore
    chat_id     TEXT
);

CREATE TABLE knowledge_file (
    id            TEXT PRIMARY KEY,         -- wf_ + 12 letters/digits
    workspace_id  TEXT NOT NULL,
    name          TEXT NOT NULL,
    media_type    TEXT NOT NULL,
    size          INTEGER NOT NULL,
    sha256        TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL
);
CREATE INDEX knowledge_file_workspace ON knowledge_file(workspace_id, created_at);
