-- Branches (DESIGN §13): a chat is a tree.  parent_id: the message this one
-- answers or follows (NULL: a version of the chat's first message); its siblings are its
-- versions, oldest first.  A parent is always an earlier message of the same chat, so ids
-- grow along every path (pages walk a path by id) and no cycle can be stored.
-- chat.leaf_id: the last message of the path the chat shows (NULL: no message yet).
-- copied_from: a fork's copy of the message it names (in another chat); a copy carries no
-- tokens or cost of its own (they were paid once, in the chat it was copied from).
-- The messages a retry or an edit took out (superseded_by) become the earlier versions:
-- each message's parent is the conversation's last message when it was written (for one
-- still in the conversation: the one before it; for one taken out, the newest earlier
-- message then still in it).  superseded_by is then cleared: the path is the conversation,
-- and search indexes every branch.
ALTER TABLE message ADD COLUMN parent_id INTEGER;
ALTER TABLE message ADD COLUMN copied_from INTEGER;
ALTER TABLE chat ADD COLUMN leaf_id INTEGER;
UPDATE message SET parent_id = p.prev FROM (
    SELECT id, lag(id) OVER (PARTITION BY chat_id ORDER BY id) AS prev
    FROM message WHERE superseded_by IS NULL) AS p
WHERE message.id = p.id AND p.prev IS NOT NULL;
CREATE TEMP TABLE superseding (by_id INTEGER PRIMARY KEY, last_id INTEGER NOT NULL);
INSERT INTO superseding (by_id, last_id)
    SELECT superseded_by, max(id) FROM message WHERE superseded_by IS NOT NULL GROUP BY 1;
UPDATE message SET parent_id = (
    SELECT x.id FROM message AS x LEFT JOIN superseding AS s ON s.by_id = x.superseded_by
    WHERE x.chat_id = message.chat_id AND x.id < message.id
      AND (x.superseded_by IS NULL OR s.last_id >= message.id)
    ORDER BY x.id DESC LIMIT 1)
WHERE superseded_by IS NOT NULL;
DROP TABLE temp.superseding;
UPDATE chat SET leaf_id = (SELECT max(id) FROM message
    WHERE message.chat_id = chat.id AND superseded_by IS NULL);
DROP TRIGGER IF EXISTS search_message_supersede;
INSERT INTO search_message (rowid, text, chat, chat_id, at)
    SELECT m.id, coalesce(m.search_text, (SELECT replace(replace(coalesce(group_concat(
            json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
            char(57345), ' ')
        FROM json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END) AS b
        WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
            '$.type') = 'text')),
        hex(m.chat_id), m.chat_id, m.created_at
    FROM message AS m WHERE m.superseded_by IS NOT NULL;
UPDATE message SET superseded_by = NULL WHERE superseded_by IS NOT NULL;
DROP INDEX IF EXISTS message_chat_current;
-- A message's versions (its siblings) and children, in one chat.
CREATE INDEX message_parent ON message(chat_id, parent_id, id);
CREATE TRIGGER message_parent_known AFTER INSERT ON message
WHEN NEW.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM message
    WHERE id = NEW.parent_id AND chat_id = NEW.chat_id AND id < NEW.id)
BEGIN SELECT RAISE(ABORT, 'a message''s parent is an earlier message of its chat'); END;
CREATE TRIGGER message_parent_fixed BEFORE UPDATE OF parent_id, chat_id ON message
WHEN NEW.parent_id IS NOT OLD.parent_id OR NEW.chat_id IS NOT OLD.chat_id
BEGIN SELECT RAISE(ABORT, 'a message''s place in its chat never changes'); END;

DROP TRIGGER IF EXISTS search_message_insert;
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
