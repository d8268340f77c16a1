-- What search indexes of a message is declared per kind of content block
-- (app/store/blocks.py: a reply's text, the titles of the web's sources…) and written with
-- the message as search_text; the index takes it from there.  A message written before
-- has none: its text blocks' text, as before.
-- And web search and fetch per workspace (app/store/web.py): no row reads as off.
ALTER TABLE message ADD COLUMN search_text TEXT;
CREATE TABLE workspace_web (
    workspace_id     TEXT PRIMARY KEY,
    enabled          INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    max_uses         INTEGER NOT NULL DEFAULT 5 CHECK (max_uses BETWEEN 1 AND 50),
    allowed_domains  TEXT NOT NULL DEFAULT '[]',
    blocked_domains  TEXT NOT NULL DEFAULT '[]'
);
DROP TRIGGER IF EXISTS search_message_insert;
CREATE TRIGGER search_message_insert AFTER INSERT ON message
WHEN NEW.superseded_by IS NULL BEGIN
    INSERT INTO search_message (rowid, text, chat, chat_id, at) VALUES (NEW.id,
        coalesce(NEW.search_text, (SELECT replace(replace(coalesce(group_concat(
            json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
            char(57345), ' ')
         FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END)
            AS b WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
            '$.type') = 'text')),
        hex(NEW.chat_id), NEW.chat_id, NEW.created_at);
END;
