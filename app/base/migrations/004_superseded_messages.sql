-- Retry and edit-and-resend take messages out of the conversation without deleting them:
-- superseded_by holds the id of the person's message that was sent again in their place
-- (retry: that same message, edit: the edited copy).  NULL: part of the conversation, the
-- only messages the model is sent and the rebuild learns from.
ALTER TABLE message ADD COLUMN superseded_by INTEGER;
-- The conversation as an index of its own: counting and paging it stay index-only.
CREATE INDEX message_chat_current ON message(chat_id, id) WHERE superseded_by IS NULL;
