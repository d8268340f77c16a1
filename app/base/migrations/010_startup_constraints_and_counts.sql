-- Start-up at any size: the constraints do the checking, and the first paint
-- reads counts rather than every chat.  A chat is in Ungrouped unless a membership row
-- names it.  Triggers hold what foreign keys hold only where a connection turned them on
-- (a hand edit in the sqlite3 shell does not): a membership names a stored chat and a
-- stored workspace, ids never change, and a deleted chat or workspace takes its
-- memberships along.  The start-up check (app/store/registry/consistency.py) looks that
-- these triggers and the UNIQUE indexes exist, and scans only for what a missing one
-- would no longer rule out.
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

-- How many chats each place shows (visible: unarchived) and hides (archived); place ''
-- is Ungrouped.  The first paint reads these 1,001 rows instead of counting 250,000 chats.
CREATE TABLE chat_count (
    place     TEXT PRIMARY KEY,
    visible   INTEGER NOT NULL DEFAULT 0,
    archived  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO chat_count (place, visible, archived)
    SELECT coalesce(m.workspace_id, ''), sum(c.archived_at IS NULL),
           sum(c.archived_at IS NOT NULL)
    FROM chat c LEFT JOIN membership m ON m.chat_id = c.id GROUP BY 1;
INSERT INTO chat_count (place) VALUES ('') ON CONFLICT (place) DO NOTHING;
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
-- (Its membership goes first, which moves the chat to Ungrouped's count.)
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
