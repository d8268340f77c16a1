-- Suggestions that say where: the entries they change whole, with section and
-- position, so accepting never picks another entry that opens with the same line; where
-- the text goes in its section; the entries accepting it removes (the open question an
-- answer replaces).  CAIRN.md: the version Cairn last read the file at, to
-- tell which entries an outside save removed that Cairn wrote since; those entries, until
-- the person restores or dismisses them (JSON list of places); the sync services'
-- conflict copies the person already merged or dismissed (JSON list of [name, sha]).
ALTER TABLE knowledge_suggestion ADD COLUMN places TEXT NOT NULL DEFAULT '[]';
ALTER TABLE knowledge_suggestion ADD COLUMN position INTEGER;
ALTER TABLE knowledge_suggestion ADD COLUMN removes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE workspace_folder ADD COLUMN read_version INTEGER;
ALTER TABLE workspace_folder ADD COLUMN removed TEXT NOT NULL DEFAULT '[]';
ALTER TABLE workspace_folder ADD COLUMN copies_done TEXT NOT NULL DEFAULT '[]';
