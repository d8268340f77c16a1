-- History brought from Claude.ai and ChatGPT (app/history/): the source ids an
-- import remembers, so that importing the same export again adds nothing and a newer one
-- adds only what is new.  imported_chat: a chat of the export and the chat it became (and
-- the export's update time when last read); imported_message: each message's source id in
-- its chat; imported_project: a project and the workspace it became; imported_item: a
-- knowledge file, memory or instruction already taken in or offered (by a hash).
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
