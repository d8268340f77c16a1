-- What the knowledge model suggested that code would not apply by itself: kept until the
-- person accepts, edits or dismisses it.  *targets* holds the entries it changes, as
-- they read when it was suggested (JSON list of leading lines; [] for an add).
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
);
CREATE INDEX knowledge_suggestion_owner ON knowledge_suggestion(owner, id);

-- The chat's watermark before the rebuild that saved this version: what "Keep mine"
-- learns again when it replaces the version (NULL: not a rebuild, or saved before this).
ALTER TABLE knowledge_version ADD COLUMN covered_from INTEGER;

-- Where a chat's exchanges were said, when the chat moved before they were learned:
-- messages up to *upto* were said in *workspace_id* (NULL: Ungrouped).
CREATE TABLE knowledge_origin (
    chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
    upto          INTEGER NOT NULL,
    workspace_id  TEXT,
    PRIMARY KEY (chat_id, upto)
);
