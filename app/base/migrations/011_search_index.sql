-- Find anything: a full-text index in this database, kept current in the same
-- transaction as every write that changes indexed text.  Messages and chat titles are
-- kept by the triggers below (every path that writes them, imports and cascades too);
-- knowledge entries and a file's text are written by app/store/search_index.py, because
-- they need Python (a document split into entries, a blob read from disk).  Deleting a
-- document or a file is again a trigger, so a purge never leaves rows behind.
-- U+E000/U+E001 mark matched words in snippets: the indexed text never holds them.
-- chat: the chat's id as one token (hex), so that a workspace's or a chat's messages are
-- an FTS5 filter, never a scan of every match.
CREATE VIRTUAL TABLE search_message USING fts5(
    text, chat, chat_id UNINDEXED, at UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');
-- What is not a message: a chat's title, a knowledge entry, a file.  Its rowid is n of
-- search_key, which says what the row is.
CREATE TABLE search_key (
    n      INTEGER PRIMARY KEY,
    kind   TEXT NOT NULL CHECK (kind IN ('chat', 'knowledge', 'file')),
    ref    TEXT NOT NULL,        -- the chat id, the document's owner, the file id
    owner  TEXT NOT NULL,        -- the workspace (a chat's: through membership, so '')
    part   INTEGER NOT NULL,     -- a knowledge entry's first line in its document
    at     TEXT NOT NULL
);
CREATE INDEX search_key_ref ON search_key(kind, ref);
-- kind ('chat', 'knowledge', 'file') and owner (a knowledge entry's or a file's workspace
-- id as one token, hex) are filters as tokens, like search_message's chat.
CREATE VIRTUAL TABLE search_doc USING fts5(
    title, body, content, kind, owner,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');
-- 'pending': knowledge entries and file contents still to be indexed (by Python, right
-- after this migration); 'complete' once they are.
CREATE TABLE search_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TRIGGER search_message_insert AFTER INSERT ON message
WHEN NEW.superseded_by IS NULL BEGIN
    INSERT INTO search_message (rowid, text, chat, chat_id, at) VALUES (NEW.id,
        (SELECT replace(replace(coalesce(group_concat(json_extract(b.value, '$.text'),
            char(10)), ''), char(57344), ' '), char(57345), ' ')
         FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END)
            AS b WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
            '$.type') = 'text'),
        hex(NEW.chat_id), NEW.chat_id, NEW.created_at);
END;
CREATE TRIGGER search_message_supersede AFTER UPDATE OF superseded_by ON message
WHEN OLD.superseded_by IS NULL AND NEW.superseded_by IS NOT NULL BEGIN
    DELETE FROM search_message WHERE rowid = OLD.id;
END;
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

-- An existing database: what SQL can index, now; the rest on the first open after.
INSERT INTO search_message (rowid, text, chat, chat_id, at)
    SELECT m.id, (SELECT replace(replace(coalesce(group_concat(
            json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
            char(57345), ' ')
        FROM json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END) AS b
        WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
            '$.type') = 'text'),
        hex(m.chat_id), m.chat_id, m.created_at
    FROM message AS m WHERE m.superseded_by IS NULL;
INSERT INTO search_key (kind, ref, owner, part, at)
    SELECT 'chat', id, '', 0, created_at FROM chat;
INSERT INTO search_key (kind, ref, owner, part, at)
    SELECT 'file', id, workspace_id, 0, created_at FROM knowledge_file;
INSERT INTO search_doc (rowid, title, body, content, kind, owner)
    SELECT k.n, c.title, '', '', 'chat', '' FROM search_key AS k
    JOIN chat AS c ON c.id = k.ref WHERE k.kind = 'chat';
INSERT INTO search_doc (rowid, title, body, content, kind, owner)
    SELECT k.n, f.name, f.description, '', 'file', hex(f.workspace_id) FROM search_key AS k
    JOIN knowledge_file AS f ON f.id = k.ref WHERE k.kind = 'file';
-- Knowledge entries and file contents need Python: indexed at the next open, unless there
-- are none yet (a new database: every later write indexes itself).
INSERT INTO search_state (key, value) SELECT 'index', CASE WHEN EXISTS (SELECT 1 FROM
    knowledge) OR EXISTS (SELECT 1 FROM knowledge_file) THEN 'pending' ELSE 'complete' END;
