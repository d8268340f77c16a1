-- The history keeps every version (no longer the last 200), compactly: see
-- app/store/history.py.  A row with a delta holds an empty text and the compressed
-- line changes from the version before it; a row without one (every row written before
-- this step) holds its whole text.  size: the version's length in characters, so that
-- listing a long history never rebuilds text.
ALTER TABLE knowledge_version ADD COLUMN delta BLOB;
ALTER TABLE knowledge_version ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
UPDATE knowledge_version SET size = length(text);
