-- Cairn's database at schema 18 (PRAGMA user_version), as the migrations
-- in app/base/migrations/ make it: for reading, never run.  Written by
-- `uv run python -m tests.core.test_schema`; tests/core/test_schema.py checks it.
-- (SQLite writes a column added later at the end of its table's last line.)

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
    pin_seq       INTEGER, draft TEXT NOT NULL DEFAULT '', knowledge_watermark INTEGER NOT NULL DEFAULT 0, leaf_id INTEGER,                  -- larger = pinned more recently
    CHECK (archived_at IS NULL OR pin_seq IS NULL)
);

CREATE UNIQUE INDEX chat_pin ON chat(pin_seq) WHERE pin_seq IS NOT NULL;

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

CREATE TABLE pending_change (
    id     INTEGER PRIMARY KEY,
    op     TEXT NOT NULL,
    args   TEXT NOT NULL
);

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
, superseded_by INTEGER, output_estimated INTEGER NOT NULL DEFAULT 0, search_text TEXT, parent_id INTEGER, copied_from INTEGER);

CREATE INDEX message_chat ON message(chat_id, id);

CREATE TABLE setting (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL                    -- JSON; never a secret (those live in keyring)
);

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

CREATE TABLE knowledge_version (
    id        INTEGER PRIMARY KEY,
    owner     TEXT NOT NULL,
    version   INTEGER NOT NULL,
    text      TEXT NOT NULL,
    source    TEXT NOT NULL,
    chat_id   TEXT,
    saved_at  TEXT NOT NULL, covered_from INTEGER, delta BLOB, size INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner, version)
);

CREATE TABLE knowledge_status (
    owner          TEXT PRIMARY KEY,
    last_success   TEXT,
    last_error     TEXT,
    last_error_at  TEXT
);

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

CREATE TABLE removed_membership (
    workspace_id  TEXT NOT NULL REFERENCES removed_workspace(id) ON DELETE CASCADE,
    chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, position)
);

CREATE TABLE knowledge_suggestion (
    id          INTEGER PRIMARY KEY,
    owner       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('add', 'update', 'merge')),
    section     TEXT,
    targets     TEXT NOT NULL DEFAULT '[]',
    text        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    evidence    TEXT NOT NULL DEFAULT '',
    said_by     TEXT,                       -- whose words the evidence quotes, if found
    chat_id     TEXT,
    created_at  TEXT NOT NULL
, places TEXT NOT NULL DEFAULT '[]', position INTEGER, removes TEXT NOT NULL DEFAULT '[]');

CREATE INDEX knowledge_suggestion_owner ON knowledge_suggestion(owner, id);

CREATE TABLE knowledge_origin (
    chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    upto          INTEGER NOT NULL,
    workspace_id  TEXT,
    PRIMARY KEY (chat_id, upto)
);

CREATE TABLE workspace_folder (
    workspace_id     TEXT PRIMARY KEY,
    knowledge_file   INTEGER NOT NULL DEFAULT 0 CHECK (knowledge_file IN (0, 1)),
    written_version  INTEGER,
    written_sha      TEXT,
    folder_access    INTEGER NOT NULL DEFAULT 0 CHECK (folder_access IN (0, 1)),
    folder_allow     TEXT NOT NULL DEFAULT '[]'
, read_version INTEGER, removed TEXT NOT NULL DEFAULT '[]', copies_done TEXT NOT NULL DEFAULT '[]');

CREATE TRIGGER membership_known BEFORE INSERT ON membership
WHEN NOT EXISTS (SELECT 1 FROM chat WHERE id = NEW.chat_id)
  OR NOT EXISTS (SELECT 1 FROM workspace WHERE id = NEW.workspace_id)
BEGIN SELECT RAISE(ABORT, 'a membership names an unknown chat or workspace'); END;

CREATE TRIGGER membership_known_update BEFORE UPDATE OF workspace_id, chat_id ON membership
WHEN NOT EXISTS (SELECT 1 FROM chat WHERE id = NEW.chat_id)
  OR NOT EXISTS (SELECT 1 FROM workspace WHERE id = NEW.workspace_id)
BEGIN SELECT RAISE(ABORT, 'a membership names an unknown chat or workspace'); END;

CREATE TRIGGER chat_id_fixed BEFORE UPDATE OF id ON chat WHEN NEW.id IS NOT OLD.id
BEGIN SELECT RAISE(ABORT, 'a chat''s id never changes'); END;

CREATE TRIGGER workspace_id_fixed BEFORE UPDATE OF id ON workspace WHEN NEW.id IS NOT OLD.id
BEGIN SELECT RAISE(ABORT, 'a workspace''s id never changes'); END;

CREATE TABLE chat_count (
    place     TEXT PRIMARY KEY,
    visible   INTEGER NOT NULL DEFAULT 0,
    archived  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TRIGGER chat_counted AFTER INSERT ON chat BEGIN
    UPDATE chat_count SET visible = visible + (NEW.archived_at IS NULL),
                          archived = archived + (NEW.archived_at IS NOT NULL)
    WHERE place = '';
END;

CREATE TRIGGER chat_archived_counted AFTER UPDATE OF archived_at ON chat
WHEN (OLD.archived_at IS NULL) IS NOT (NEW.archived_at IS NULL) BEGIN
    UPDATE chat_count SET visible = visible + (NEW.archived_at IS NULL) - (OLD.archived_at IS NULL),
                          archived = archived + (NEW.archived_at IS NOT NULL) - (OLD.archived_at IS NOT NULL)
    WHERE place = coalesce((SELECT workspace_id FROM membership WHERE chat_id = NEW.id), '');
END;

CREATE TRIGGER chat_deleted BEFORE DELETE ON chat BEGIN
    DELETE FROM membership WHERE chat_id = OLD.id;
    UPDATE chat_count SET visible = visible - (OLD.archived_at IS NULL),
                          archived = archived - (OLD.archived_at IS NOT NULL)
    WHERE place = '';
END;

CREATE TRIGGER membership_counted AFTER INSERT ON membership BEGIN
    INSERT INTO chat_count (place) VALUES (NEW.workspace_id) ON CONFLICT (place) DO NOTHING;
    UPDATE chat_count SET
        visible = visible + (SELECT archived_at IS NULL FROM chat WHERE id = NEW.chat_id),
        archived = archived + (SELECT archived_at IS NOT NULL FROM chat WHERE id = NEW.chat_id)
    WHERE place = NEW.workspace_id;
    UPDATE chat_count SET
        visible = visible - (SELECT archived_at IS NULL FROM chat WHERE id = NEW.chat_id),
        archived = archived - (SELECT archived_at IS NOT NULL FROM chat WHERE id = NEW.chat_id)
    WHERE place = '';
END;

CREATE TRIGGER membership_uncounted AFTER DELETE ON membership
WHEN EXISTS (SELECT 1 FROM chat WHERE id = OLD.chat_id) BEGIN
    UPDATE chat_count SET
        visible = visible - (SELECT archived_at IS NULL FROM chat WHERE id = OLD.chat_id),
        archived = archived - (SELECT archived_at IS NOT NULL FROM chat WHERE id = OLD.chat_id)
    WHERE place = OLD.workspace_id;
    UPDATE chat_count SET
        visible = visible + (SELECT archived_at IS NULL FROM chat WHERE id = OLD.chat_id),
        archived = archived + (SELECT archived_at IS NOT NULL FROM chat WHERE id = OLD.chat_id)
    WHERE place = '';
END;

CREATE TRIGGER membership_recounted AFTER UPDATE OF workspace_id, chat_id ON membership
BEGIN
    UPDATE chat_count SET
        visible = visible - (SELECT archived_at IS NULL FROM chat WHERE id = OLD.chat_id),
        archived = archived - (SELECT archived_at IS NOT NULL FROM chat WHERE id = OLD.chat_id)
    WHERE place = OLD.workspace_id;
    INSERT INTO chat_count (place) VALUES (NEW.workspace_id) ON CONFLICT (place) DO NOTHING;
    UPDATE chat_count SET
        visible = visible + (SELECT archived_at IS NULL FROM chat WHERE id = NEW.chat_id),
        archived = archived + (SELECT archived_at IS NOT NULL FROM chat WHERE id = NEW.chat_id)
    WHERE place = NEW.workspace_id;
END;

CREATE TRIGGER workspace_deleted AFTER DELETE ON workspace BEGIN
    DELETE FROM membership WHERE workspace_id = OLD.id;
    DELETE FROM chat_count WHERE place = OLD.id;
END;

CREATE VIRTUAL TABLE search_message USING fts5(
    text, chat, chat_id UNINDEXED, at UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');

CREATE TABLE search_key (
    n      INTEGER PRIMARY KEY,
    kind   TEXT NOT NULL CHECK (kind IN ('chat', 'knowledge', 'file')),
    ref    TEXT NOT NULL,        -- the chat id, the document's owner, the file id
    owner  TEXT NOT NULL,        -- the workspace (a chat's: through membership, so '')
    part   INTEGER NOT NULL,     -- a knowledge entry's first line in its document
    at     TEXT NOT NULL
);

CREATE INDEX search_key_ref ON search_key(kind, ref);

CREATE VIRTUAL TABLE search_doc USING fts5(
    title, body, content, kind, owner,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');

CREATE TABLE search_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TRIGGER search_message_delete AFTER DELETE ON message BEGIN
    DELETE FROM search_message WHERE rowid = OLD.id;
END;

CREATE TRIGGER search_chat_insert AFTER INSERT ON chat BEGIN
    INSERT INTO search_key (kind, ref, owner, part, at)
        VALUES ('chat', NEW.id, '', 0, NEW.created_at);
    INSERT INTO search_doc (rowid, title, body, content, kind, owner)
        VALUES (last_insert_rowid(), NEW.title, '', '', 'chat', '');
END;

CREATE TRIGGER search_chat_rename AFTER UPDATE OF title ON chat
WHEN NEW.title IS NOT OLD.title BEGIN
    DELETE FROM search_doc WHERE rowid =
        (SELECT n FROM search_key WHERE kind = 'chat' AND ref = OLD.id);
    INSERT INTO search_doc (rowid, title, body, content, kind, owner)
        SELECT n, NEW.title, '', '', 'chat', '' FROM search_key
        WHERE kind = 'chat' AND ref = NEW.id;
END;

CREATE TRIGGER search_chat_delete AFTER DELETE ON chat BEGIN
    DELETE FROM search_doc WHERE rowid =
        (SELECT n FROM search_key WHERE kind = 'chat' AND ref = OLD.id);
    DELETE FROM search_key WHERE kind = 'chat' AND ref = OLD.id;
END;

CREATE TRIGGER search_knowledge_delete AFTER DELETE ON knowledge BEGIN
    DELETE FROM search_doc WHERE rowid IN
        (SELECT n FROM search_key WHERE kind = 'knowledge' AND ref = OLD.owner);
    DELETE FROM search_key WHERE kind = 'knowledge' AND ref = OLD.owner;
END;

CREATE TRIGGER search_file_insert AFTER INSERT ON knowledge_file BEGIN
    INSERT INTO search_key (kind, ref, owner, part, at)
        VALUES ('file', NEW.id, NEW.workspace_id, 0, NEW.created_at);
    INSERT INTO search_doc (rowid, title, body, content, kind, owner)
        VALUES (last_insert_rowid(), NEW.name, NEW.description, '', 'file',
                hex(NEW.workspace_id));
END;

CREATE TRIGGER search_file_describe AFTER UPDATE OF name, description ON knowledge_file
BEGIN
    UPDATE search_doc SET title = NEW.name, body = NEW.description WHERE rowid =
        (SELECT n FROM search_key WHERE kind = 'file' AND ref = NEW.id);
END;

CREATE TRIGGER search_file_delete AFTER DELETE ON knowledge_file BEGIN
    DELETE FROM search_doc WHERE rowid =
        (SELECT n FROM search_key WHERE kind = 'file' AND ref = OLD.id);
    DELETE FROM search_key WHERE kind = 'file' AND ref = OLD.id;
END;

CREATE TABLE message_day (
    day      TEXT PRIMARY KEY,   -- YYYY-MM-DD of created_at (UTC)
    first_id INTEGER NOT NULL,
    last_id  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER message_day_insert AFTER INSERT ON message BEGIN
    INSERT INTO message_day (day, first_id, last_id)
        VALUES (substr(NEW.created_at, 1, 10), NEW.id, NEW.id)
        ON CONFLICT (day) DO UPDATE SET first_id = min(first_id, excluded.first_id),
            last_id = max(last_id, excluded.last_id);
END;

CREATE TABLE workspace_web (
    workspace_id     TEXT PRIMARY KEY,
    enabled          INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    max_uses         INTEGER NOT NULL DEFAULT 5 CHECK (max_uses BETWEEN 1 AND 50),
    allowed_domains  TEXT NOT NULL DEFAULT '[]',
    blocked_domains  TEXT NOT NULL DEFAULT '[]'
);

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

CREATE INDEX message_parent ON message(chat_id, parent_id, id);

CREATE TRIGGER message_parent_known AFTER INSERT ON message
WHEN NEW.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM message
    WHERE id = NEW.parent_id AND chat_id = NEW.chat_id AND id < NEW.id)
BEGIN SELECT RAISE(ABORT, 'a message''s parent is an earlier message of its chat'); END;

CREATE TRIGGER message_parent_fixed BEFORE UPDATE OF parent_id, chat_id ON message
WHEN NEW.parent_id IS NOT OLD.parent_id OR NEW.chat_id IS NOT OLD.chat_id
BEGIN SELECT RAISE(ABORT, 'a message''s place in its chat never changes'); END;

CREATE TRIGGER search_message_insert AFTER INSERT ON message
BEGIN
    INSERT INTO search_message (rowid, text, chat, chat_id, at) VALUES (NEW.id,
        coalesce(NEW.search_text, (SELECT replace(replace(coalesce(group_concat(
            json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
            char(57345), ' ')
         FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END)
            AS b WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
            '$.type') = 'text')),
        hex(NEW.chat_id), NEW.chat_id, NEW.created_at);
END;

CREATE TABLE removed_chat (
    chat_id       TEXT PRIMARY KEY REFERENCES chat(id) ON DELETE CASCADE,
    workspace_id  TEXT,
    position      INTEGER,
    removed_at    TEXT NOT NULL
);

CREATE INDEX removed_chat_removed_at ON removed_chat(removed_at);

CREATE TRIGGER removed_chat_uncounted AFTER INSERT ON removed_chat BEGIN
    UPDATE chat_count SET
        visible = visible - (SELECT archived_at IS NULL FROM chat WHERE id = NEW.chat_id),
        archived = archived - (SELECT archived_at IS NOT NULL FROM chat WHERE id = NEW.chat_id)
    WHERE place = coalesce((SELECT workspace_id FROM membership WHERE chat_id = NEW.chat_id), '');
END;

CREATE TRIGGER removed_chat_recounted AFTER DELETE ON removed_chat
WHEN EXISTS (SELECT 1 FROM chat WHERE id = OLD.chat_id) BEGIN
    UPDATE chat_count SET
        visible = visible + (SELECT archived_at IS NULL FROM chat WHERE id = OLD.chat_id),
        archived = archived + (SELECT archived_at IS NOT NULL FROM chat WHERE id = OLD.chat_id)
    WHERE place = coalesce((SELECT workspace_id FROM membership WHERE chat_id = OLD.chat_id), '');
END;

CREATE TABLE imported_chat (
    source     TEXT NOT NULL,
    source_id  TEXT NOT NULL,
    chat_id    TEXT NOT NULL REFERENCES chat (id) ON DELETE CASCADE,
    updated    TEXT NOT NULL,
    PRIMARY KEY (source, source_id)
) WITHOUT ROWID;

CREATE INDEX imported_chat_chat ON imported_chat (chat_id);

CREATE TABLE imported_message (
    chat_id    TEXT NOT NULL REFERENCES chat (id) ON DELETE CASCADE,
    source_id  TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    PRIMARY KEY (chat_id, source_id)
) WITHOUT ROWID;

CREATE TABLE imported_project (
    source       TEXT NOT NULL,
    source_id    TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    PRIMARY KEY (source, source_id)
) WITHOUT ROWID;

CREATE TABLE imported_item (
    source     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    key        TEXT NOT NULL,
    PRIMARY KEY (source, kind, key)
) WITHOUT ROWID;
