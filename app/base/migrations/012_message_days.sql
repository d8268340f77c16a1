-- Search by date (before:/after:) without walking every newer match: for each day, the
-- lowest and highest id of a message written that day, so that a date becomes a range
-- of ids FTS5 walks itself.  Kept by a trigger in the insert's own transaction; a
-- deleted message leaves its day's range as it was (still a range holding every message
-- of that day).  Ids follow time except for imported chats, whose days widen their range.
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
INSERT INTO message_day (day, first_id, last_id)
    SELECT substr(created_at, 1, 10), min(id), max(id) FROM message GROUP BY 1;
