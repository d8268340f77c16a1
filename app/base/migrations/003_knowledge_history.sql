-- Every saved version of every knowledge document (the last 200 per document are kept).
CREATE TABLE knowledge_version (
    id        INTEGER PRIMARY KEY,
    owner     TEXT NOT NULL,
    version   INTEGER NOT NULL,
    text      TEXT NOT NULL,
    source    TEXT NOT NULL,
    chat_id   TEXT,
    saved_at  TEXT NOT NULL,
    UNIQUE (owner, version)
);
INSERT INTO knowledge_version (owner, version, text, source, chat_id, saved_at)
    SELECT owner, version, text, source, chat_id, updated_at FROM knowledge;

-- The last message a successful rebuild covered, per chat.
ALTER TABLE chat ADD COLUMN knowledge_watermark INTEGER NOT NULL DEFAULT 0;

-- Per document: when the rebuild last succeeded, and its last failure in a sentence.
CREATE TABLE knowledge_status (
    owner          TEXT PRIMARY KEY,
    last_success   TEXT,
    last_error     TEXT,
    last_error_at  TEXT
);
