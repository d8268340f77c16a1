-- What a workspace may do in its own folder, off unless the person turned it
-- on.  knowledge_file: its document kept as <folder>/CAIRN.md; written_version and
-- written_sha: the version last written to (or taken in from) that file and the SHA-256
-- of its bytes then, so a change of the file is told from a write Cairn has not made yet
-- (a crash between a version's commit and the file's write is healed at the next read).
-- folder_access (set on a project): Claude may list and read the folder; folder_allow:
-- JSON list of hidden or secret-looking paths the person allowed.  Keyed by id without a
-- foreign key, like the knowledge: removing a workspace keeps the person's choice.
CREATE TABLE workspace_folder (
    workspace_id     TEXT PRIMARY KEY,
    knowledge_file   INTEGER NOT NULL DEFAULT 0 CHECK (knowledge_file IN (0, 1)),
    written_version  INTEGER,
    written_sha      TEXT,
    folder_access    INTEGER NOT NULL DEFAULT 0 CHECK (folder_access IN (0, 1)),
    folder_allow     TEXT NOT NULL DEFAULT '[]'
);
