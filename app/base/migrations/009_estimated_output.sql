-- A reply stopped or cut off before the server counted its output: the output tokens
-- stored are Cairn's estimate of what streamed (1: an estimate, shown as "~120 out
-- (estimated)"), never the placeholder the stream opened with.
ALTER TABLE message ADD COLUMN output_estimated INTEGER NOT NULL DEFAULT 0;
