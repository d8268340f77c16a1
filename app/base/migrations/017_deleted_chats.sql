-- Deleted chats : a chat the person deleted leaves every list, search and the
-- rebuild at once, but its row and messages stay 30 days so that Restore brings it back
-- (app/store/registry/removed_chats.py); then the purge deletes them.  workspace_id and
-- position: where it was (NULL: Ungrouped), no foreign key (the workspace may go too).
-- A removed chat counts in no place of chat_count: its membership goes first (which
-- moves it to Ungrouped's count), then this row takes it out; deleting the row (Restore,
-- or the purge before it deletes the chat) counts it again.
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
