"""The SQLite database: pragmas, migrations, and the one writer.

Every write goes through :meth:`Database.write`, which serialises writers with a lock around
one connection and opens each transaction with ``BEGIN IMMEDIATE`` so that a second process
waits instead of failing half-way.  WAL with ``synchronous=FULL`` means a change that
reported success survives a crash or a power loss.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.base import locations
from app.errors import StartupError, StorageError

log = logging.getLogger(__name__)

DB_NAME = "cairn.db"

# The index of a message's text (see the last migration); ``cairn search --reindex`` makes it
# again after the first index's script.
SEARCH_TEXT_TRIGGER = """
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
"""

# Each entry migrates from user_version == index to index + 1.  Never edit a shipped entry:
# add a new one.  Uniqueness lives in separate indexes (not inline) so that the start-up
# check can be exercised on a database whose indexes were lost or hand-edited.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE workspace (
        id            TEXT PRIMARY KEY,
        path          TEXT NOT NULL,            -- canonical at creation, never rewritten
        path_key      TEXT NOT NULL,            -- de-duplication key (case, normal form)
        title         TEXT NOT NULL,
        description   TEXT NOT NULL DEFAULT '',
        instructions  TEXT NOT NULL DEFAULT '',
        build_status  TEXT NOT NULL DEFAULT 'idea'
                      CHECK (build_status IN ('idea', 'planning', 'building', 'shipped')),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    );
    CREATE UNIQUE INDEX workspace_path_key ON workspace(path_key);

    -- The display order is its own record: smaller position shows first.
    CREATE TABLE display_order (
        position      INTEGER PRIMARY KEY,
        workspace_id  TEXT NOT NULL REFERENCES workspace(id) ON DELETE CASCADE
    );
    CREATE UNIQUE INDEX display_order_workspace ON display_order(workspace_id);

    CREATE TABLE chat (
        id            TEXT PRIMARY KEY,
        title         TEXT NOT NULL,
        folder        TEXT,                     -- as recorded, even when it does not resolve
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        archived_at   TEXT,
        pin_seq       INTEGER,                  -- larger = pinned more recently
        CHECK (archived_at IS NULL OR pin_seq IS NULL)
    );
    CREATE UNIQUE INDEX chat_pin ON chat(pin_seq) WHERE pin_seq IS NOT NULL;

    -- A chat's place in its workspace's manual order: smaller position shows first.
    CREATE TABLE membership (
        workspace_id  TEXT NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, position)
    );
    CREATE UNIQUE INDEX membership_chat ON membership(chat_id);

    CREATE TABLE registry_state (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
    );

    -- Changes that span the database and the disk: written first, cleared last.
    CREATE TABLE pending_change (
        id     INTEGER PRIMARY KEY,
        op     TEXT NOT NULL,
        args   TEXT NOT NULL
    );
    """,
    """
    -- What the person was typing and has not sent: kept across restarts and failures.
    ALTER TABLE chat ADD COLUMN draft TEXT NOT NULL DEFAULT '';

    CREATE TABLE message (
        id                  INTEGER PRIMARY KEY,
        chat_id             TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
        role                TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content             TEXT NOT NULL,      -- JSON list of content blocks
        status              TEXT NOT NULL DEFAULT 'complete'
                            CHECK (status IN ('complete', 'stopped', 'failed')),
        error               TEXT,               -- the sentence shown for a failed turn
        model               TEXT,
        input_tokens        INTEGER,
        cache_write_tokens  INTEGER,
        cache_read_tokens   INTEGER,
        output_tokens       INTEGER,
        cost_usd            REAL,
        created_at          TEXT NOT NULL
    );
    CREATE INDEX message_chat ON message(chat_id, id);

    CREATE TABLE setting (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL                    -- JSON; never a secret (those live in keyring)
    );

    -- One knowledge document per workspace, and 'personal' for personal memory.  Not tied
    -- to the workspace row by a foreign key: removing a workspace never deletes what the
    -- person or the rebuild wrote.
    CREATE TABLE knowledge (
        owner       TEXT PRIMARY KEY,
        text        TEXT NOT NULL,
        version     INTEGER NOT NULL,
        updated_at  TEXT NOT NULL,
        source      TEXT NOT NULL,              -- user | rebuild | import | restore
        chat_id     TEXT
    );

    CREATE TABLE knowledge_file (
        id            TEXT PRIMARY KEY,         -- wf_ + 12 letters/digits
        workspace_id  TEXT NOT NULL,
        name          TEXT NOT NULL,
        media_type    TEXT NOT NULL,
        size          INTEGER NOT NULL,
        sha256        TEXT NOT NULL,
        description   TEXT NOT NULL DEFAULT '',
        created_at    TEXT NOT NULL
    );
    CREATE INDEX knowledge_file_workspace ON knowledge_file(workspace_id, created_at);
    """,
    """
    -- Every saved version of every knowledge document (the last 200 per document are kept).
    CREATE TABLE knowledge_version (
        id        INTEGER PRIMARY KEY,
        owner     TEXT NOT NULL,
        version   INTEGER NOT NULL,
        text      TEXT NOT NULL,
        source    TEXT NOT NULL,
        chat_id   TEXT,
        saved_at  TEXT NOT NULL,
        UNIQUE (owner, version)
    );
    INSERT INTO knowledge_version (owner, version, text, source, chat_id, saved_at)
        SELECT owner, version, text, source, chat_id, updated_at FROM knowledge;

    -- The last message a successful rebuild covered, per chat.
    ALTER TABLE chat ADD COLUMN knowledge_watermark INTEGER NOT NULL DEFAULT 0;

    -- Per document: when the rebuild last succeeded, and its last failure in a sentence.
    CREATE TABLE knowledge_status (
        owner          TEXT PRIMARY KEY,
        last_success   TEXT,
        last_error     TEXT,
        last_error_at  TEXT
    );
    """,
    """
    -- Retry and edit-and-resend take messages out of the conversation without deleting them:
    -- superseded_by holds the id of the person's message that was sent again in their place
    -- (retry: that same message, edit: the edited copy).  NULL: part of the conversation, the
    -- only messages the model is sent and the rebuild learns from.
    ALTER TABLE message ADD COLUMN superseded_by INTEGER;
    -- The conversation as an index of its own: counting and paging it stay index-only.
    CREATE INDEX message_chat_current ON message(chat_id, id) WHERE superseded_by IS NULL;
    """,
    """
    -- Recently removed workspaces: the entry as it was, kept 30 days so that Restore can
    -- bring it back with its identity.  What else only Cairn holds (knowledge, its history,
    -- files) stays keyed by the old id until the purge.
    CREATE TABLE removed_workspace (
        id            TEXT PRIMARY KEY,
        path          TEXT NOT NULL,
        path_key      TEXT NOT NULL,
        title         TEXT NOT NULL,
        description   TEXT NOT NULL DEFAULT '',
        instructions  TEXT NOT NULL DEFAULT '',
        build_status  TEXT NOT NULL DEFAULT 'idea'
                      CHECK (build_status IN ('idea', 'planning', 'building', 'shipped')),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        removed_at    TEXT NOT NULL
    );
    CREATE INDEX removed_workspace_removed_at ON removed_workspace(removed_at);

    -- The chats it held, in their manual order: Restore re-attaches those still Ungrouped.
    CREATE TABLE removed_membership (
        workspace_id  TEXT NOT NULL REFERENCES removed_workspace(id) ON DELETE CASCADE,
        chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, position)
    );
    """,
    """
    -- What the knowledge model suggested that code would not apply by itself: kept until the
    -- person accepts, edits or dismisses it.  *targets* holds the entries it changes, as
    -- they read when it was suggested (JSON list of leading lines; [] for an add).
    CREATE TABLE knowledge_suggestion (
        id          INTEGER PRIMARY KEY,
        owner       TEXT NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN ('add', 'update', 'merge')),
        section     TEXT,
        targets     TEXT NOT NULL DEFAULT '[]',
        text        TEXT NOT NULL,
        reason      TEXT NOT NULL,
        evidence    TEXT NOT NULL DEFAULT '',
        said_by     TEXT,                       -- whose words the evidence quotes, if found
        chat_id     TEXT,
        created_at  TEXT NOT NULL
    );
    CREATE INDEX knowledge_suggestion_owner ON knowledge_suggestion(owner, id);

    -- The chat's watermark before the rebuild that saved this version: what "Keep mine"
    -- learns again when it replaces the version (NULL: not a rebuild, or saved before this).
    ALTER TABLE knowledge_version ADD COLUMN covered_from INTEGER;

    -- Where a chat's exchanges were said, when the chat moved before they were learned:
    -- messages up to *upto* were said in *workspace_id* (NULL: Ungrouped).
    CREATE TABLE knowledge_origin (
        chat_id       TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
        upto          INTEGER NOT NULL,
        workspace_id  TEXT,
        PRIMARY KEY (chat_id, upto)
    );
    """,
    """
    -- The history keeps every version (no longer the last 200), compactly: see
    -- app/store/history.py.  A row with a delta holds an empty text and the compressed
    -- line changes from the version before it; a row without one (every row written before
    -- this step) holds its whole text.  size: the version's length in characters, so that
    -- listing a long history never rebuilds text.
    ALTER TABLE knowledge_version ADD COLUMN delta BLOB;
    ALTER TABLE knowledge_version ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
    UPDATE knowledge_version SET size = length(text);
    """,
    """
    -- What a workspace may do in its own folder (issue 23), off unless the person turned it
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
    """,
    """
    -- A reply stopped or cut off before the server counted its output: the output tokens
    -- stored are Cairn's estimate of what streamed (1: an estimate, shown as "~120 out
    -- (estimated)"), never the placeholder the stream opened with.
    ALTER TABLE message ADD COLUMN output_estimated INTEGER NOT NULL DEFAULT 0;
    """,
    """
    -- Start-up at any size (issue 24): the constraints do the checking, and the first paint
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
    """,
    """
    -- Find anything (issue 22): a full-text index in this database, kept current in the same
    -- transaction as every write that changes indexed text.  Messages and chat titles are
    -- kept by the triggers below (every path that writes them, imports and cascades too);
    -- knowledge entries and a file's text are written by app/store/search_index.py, because
    -- they need Python (a document split into entries, a blob read from disk).  Deleting a
    -- document or a file is again a trigger, so a purge never leaves rows behind.
    -- U+E000/U+E001 mark matched words in snippets: the indexed text never holds them.
    -- chat: the chat's id as one token (hex), so that a workspace's or a chat's messages are
    -- an FTS5 filter, never a scan of every match.
    CREATE VIRTUAL TABLE search_message USING fts5(
        text, chat, chat_id UNINDEXED, at UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');
    -- What is not a message: a chat's title, a knowledge entry, a file.  Its rowid is n of
    -- search_key, which says what the row is.
    CREATE TABLE search_key (
        n      INTEGER PRIMARY KEY,
        kind   TEXT NOT NULL CHECK (kind IN ('chat', 'knowledge', 'file')),
        ref    TEXT NOT NULL,        -- the chat id, the document's owner, the file id
        owner  TEXT NOT NULL,        -- the workspace (a chat's: through membership, so '')
        part   INTEGER NOT NULL,     -- a knowledge entry's first line in its document
        at     TEXT NOT NULL
    );
    CREATE INDEX search_key_ref ON search_key(kind, ref);
    -- kind ('chat', 'knowledge', 'file') and owner (a knowledge entry's or a file's workspace
    -- id as one token, hex) are filters as tokens, like search_message's chat.
    CREATE VIRTUAL TABLE search_doc USING fts5(
        title, body, content, kind, owner,
        tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');
    -- 'pending': knowledge entries and file contents still to be indexed (by Python, right
    -- after this migration); 'complete' once they are.
    CREATE TABLE search_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TRIGGER search_message_insert AFTER INSERT ON message
    WHEN NEW.superseded_by IS NULL BEGIN
        INSERT INTO search_message (rowid, text, chat, chat_id, at) VALUES (NEW.id,
            (SELECT replace(replace(coalesce(group_concat(json_extract(b.value, '$.text'),
                char(10)), ''), char(57344), ' '), char(57345), ' ')
             FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END)
                AS b WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
                '$.type') = 'text'),
            hex(NEW.chat_id), NEW.chat_id, NEW.created_at);
    END;
    CREATE TRIGGER search_message_supersede AFTER UPDATE OF superseded_by ON message
    WHEN OLD.superseded_by IS NULL AND NEW.superseded_by IS NOT NULL BEGIN
        DELETE FROM search_message WHERE rowid = OLD.id;
    END;
    CREATE TRIGGER search_message_delete AFTER DELETE ON message BEGIN
        DELETE FROM search_message WHERE rowid = OLD.id;
    END;

    CREATE TRIGGER search_chat_insert AFTER INSERT ON chat BEGIN
        INSERT INTO search_key (kind, ref, owner, part, at)
            VALUES ('chat', NEW.id, '', 0, NEW.created_at);
        INSERT INTO search_doc (rowid, title, body, content, kind, owner)
            VALUES (last_insert_rowid(), NEW.title, '', '', 'chat', '');
    END;
    CREATE TRIGGER search_chat_rename AFTER UPDATE OF title ON chat
    WHEN NEW.title IS NOT OLD.title BEGIN
        DELETE FROM search_doc WHERE rowid =
            (SELECT n FROM search_key WHERE kind = 'chat' AND ref = OLD.id);
        INSERT INTO search_doc (rowid, title, body, content, kind, owner)
            SELECT n, NEW.title, '', '', 'chat', '' FROM search_key
            WHERE kind = 'chat' AND ref = NEW.id;
    END;
    CREATE TRIGGER search_chat_delete AFTER DELETE ON chat BEGIN
        DELETE FROM search_doc WHERE rowid =
            (SELECT n FROM search_key WHERE kind = 'chat' AND ref = OLD.id);
        DELETE FROM search_key WHERE kind = 'chat' AND ref = OLD.id;
    END;

    CREATE TRIGGER search_knowledge_delete AFTER DELETE ON knowledge BEGIN
        DELETE FROM search_doc WHERE rowid IN
            (SELECT n FROM search_key WHERE kind = 'knowledge' AND ref = OLD.owner);
        DELETE FROM search_key WHERE kind = 'knowledge' AND ref = OLD.owner;
    END;

    CREATE TRIGGER search_file_insert AFTER INSERT ON knowledge_file BEGIN
        INSERT INTO search_key (kind, ref, owner, part, at)
            VALUES ('file', NEW.id, NEW.workspace_id, 0, NEW.created_at);
        INSERT INTO search_doc (rowid, title, body, content, kind, owner)
            VALUES (last_insert_rowid(), NEW.name, NEW.description, '', 'file',
                    hex(NEW.workspace_id));
    END;
    CREATE TRIGGER search_file_describe AFTER UPDATE OF name, description ON knowledge_file
    BEGIN
        UPDATE search_doc SET title = NEW.name, body = NEW.description WHERE rowid =
            (SELECT n FROM search_key WHERE kind = 'file' AND ref = NEW.id);
    END;
    CREATE TRIGGER search_file_delete AFTER DELETE ON knowledge_file BEGIN
        DELETE FROM search_doc WHERE rowid =
            (SELECT n FROM search_key WHERE kind = 'file' AND ref = OLD.id);
        DELETE FROM search_key WHERE kind = 'file' AND ref = OLD.id;
    END;

    -- An existing database: what SQL can index, now; the rest on the first open after.
    INSERT INTO search_message (rowid, text, chat, chat_id, at)
        SELECT m.id, (SELECT replace(replace(coalesce(group_concat(
                json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
                char(57345), ' ')
            FROM json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END) AS b
            WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
                '$.type') = 'text'),
            hex(m.chat_id), m.chat_id, m.created_at
        FROM message AS m WHERE m.superseded_by IS NULL;
    INSERT INTO search_key (kind, ref, owner, part, at)
        SELECT 'chat', id, '', 0, created_at FROM chat;
    INSERT INTO search_key (kind, ref, owner, part, at)
        SELECT 'file', id, workspace_id, 0, created_at FROM knowledge_file;
    INSERT INTO search_doc (rowid, title, body, content, kind, owner)
        SELECT k.n, c.title, '', '', 'chat', '' FROM search_key AS k
        JOIN chat AS c ON c.id = k.ref WHERE k.kind = 'chat';
    INSERT INTO search_doc (rowid, title, body, content, kind, owner)
        SELECT k.n, f.name, f.description, '', 'file', hex(f.workspace_id) FROM search_key AS k
        JOIN knowledge_file AS f ON f.id = k.ref WHERE k.kind = 'file';
    -- Knowledge entries and file contents need Python: indexed at the next open, unless there
    -- are none yet (a new database: every later write indexes itself).
    INSERT INTO search_state (key, value) SELECT 'index', CASE WHEN EXISTS (SELECT 1 FROM
        knowledge) OR EXISTS (SELECT 1 FROM knowledge_file) THEN 'pending' ELSE 'complete' END;
    """,
    # Search by date (before:/after:) without walking every newer match: for each day, the
    # lowest and highest id of a message written that day, so that a date becomes a range
    # of ids FTS5 walks itself.  Kept by a trigger in the insert's own transaction; a
    # deleted message leaves its day's range as it was (still a range holding every message
    # of that day).  Ids follow time except for imported chats, whose days widen their range.
    """
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
    """,
    # Suggestions that say where (issue 33): the entries they change whole, with section and
    # position, so accepting never picks another entry that opens with the same line; where
    # the text goes in its section; the entries accepting it removes (the open question an
    # answer replaces).  CAIRN.md (issue 33): the version Cairn last read the file at, to
    # tell which entries an outside save removed that Cairn wrote since; those entries, until
    # the person restores or dismisses them (JSON list of places); the sync services'
    # conflict copies the person already merged or dismissed (JSON list of [name, sha]).
    """
    ALTER TABLE knowledge_suggestion ADD COLUMN places TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE knowledge_suggestion ADD COLUMN position INTEGER;
    ALTER TABLE knowledge_suggestion ADD COLUMN removes TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE workspace_folder ADD COLUMN read_version INTEGER;
    ALTER TABLE workspace_folder ADD COLUMN removed TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE workspace_folder ADD COLUMN copies_done TEXT NOT NULL DEFAULT '[]';
    """,
    # What search indexes of a message is declared per kind of content block
    # (app/store/blocks.py: a reply's text, the titles of the web's sources…) and written with
    # the message as search_text; the index takes it from there.  A message written before
    # has none: its text blocks' text, as before.
    # And web search and fetch per workspace (app/store/web.py): no row reads as off.
    """
    ALTER TABLE message ADD COLUMN search_text TEXT;
    CREATE TABLE workspace_web (
        workspace_id     TEXT PRIMARY KEY,
        enabled          INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
        max_uses         INTEGER NOT NULL DEFAULT 5 CHECK (max_uses BETWEEN 1 AND 50),
        allowed_domains  TEXT NOT NULL DEFAULT '[]',
        blocked_domains  TEXT NOT NULL DEFAULT '[]'
    );
    """ + SEARCH_TEXT_TRIGGER,
    # MCP servers (app/store/mcp.py): each defined once, in Claude Desktop's shape without
    # the values of env and headers (those live in the keychain: only their names here);
    # turned on per workspace (no row: off); a per-tool policy per workspace (no row: ask).
    """
    CREATE TABLE mcp_server (
        name        TEXT PRIMARY KEY,
        config      TEXT NOT NULL,   -- JSON: command/args or url, other keys kept as given
        secret_keys TEXT NOT NULL DEFAULT '{"env": [], "headers": []}',
        imported    INTEGER NOT NULL DEFAULT 0 CHECK (imported IN (0, 1)),
        added_at    TEXT NOT NULL
    );
    CREATE TABLE workspace_mcp (
        workspace_id TEXT NOT NULL,
        server       TEXT NOT NULL REFERENCES mcp_server (name) ON DELETE CASCADE,
        PRIMARY KEY (workspace_id, server)
    ) WITHOUT ROWID;
    CREATE TABLE mcp_tool_policy (
        workspace_id TEXT NOT NULL,
        server       TEXT NOT NULL REFERENCES mcp_server (name) ON DELETE CASCADE,
        tool         TEXT NOT NULL,
        policy       TEXT NOT NULL CHECK (policy IN ('ask', 'allow', 'off')),
        PRIMARY KEY (workspace_id, server, tool)
    ) WITHOUT ROWID;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)

# How long a writer waits for another process's transaction before saying "busy".
BUSY_TIMEOUT_MS = 10_000


def utc_now() -> str:
    """Timestamps are UTC ISO 8601 with milliseconds: sortable as text."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Database:
    """One write connection, one writer; reads on their own connections.  Create with
    :meth:`open`.

    WAL lets readers go on while a writer commits, so :meth:`query` reads on a read-only
    connection per thread and never waits behind another thread's commit and fsync.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()
        self._readers = threading.local()
        self._reader_list: list[sqlite3.Connection] = []  # to close them all, from any thread
        self._readers_lock = threading.Lock()
        self._trace: Callable[[str], object] | None = None
        self._closed = False
        self._checked = False  # the integrity check passed in this process

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, folder: Path, *, check_later: bool = False) -> Database:
        """Open (or create) ``cairn.db`` in *folder*: check, then migrate with a backup first.

        With *check_later*, a database already at this version skips the integrity check
        (it reads every page: 0.2 s at 250,000 chats); the caller runs :meth:`check`
        before anything writes (the window's start-up, see ``RegistryState.load_step``).

        Several processes may open the same folder at once (the window and a command right
        after an update): a fresh database appears complete or not at all, and each migration
        step runs under SQLite's write lock after re-reading the version, so exactly one
        process migrates and takes one backup.
        """
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = (error.strerror or str(error)).lower()
            raise StartupError(f"cannot use '{folder}' as Cairn's data folder: {reason}") from error
        locations.make_private(folder, folder=True)
        path = folder / DB_NAME
        _create_if_missing(path)
        # (SQLite gives the -wal and -shm files the database's own mode)
        for private in (path, path.with_name(DB_NAME + "-wal"), path.with_name(DB_NAME + "-shm")):
            locations.make_private(private)
        _refuse_if_not_a_database(path)
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise StartupError(f"cannot open Cairn's database at '{path}': {error}") from error
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # first: others may be busy
            # Read-only questions first: a database we must refuse is never modified.
            version = _scalar(conn, "PRAGMA user_version")
            if version > SCHEMA_VERSION:
                raise StartupError(
                    f"Cairn's database at '{path}' was written by a newer version of Cairn "
                    f"(schema {version}; this version reads up to {SCHEMA_VERSION}). "
                    "Update Cairn to open it; nothing was changed."
                )
            checked = not (check_later and version == SCHEMA_VERSION)
            if checked:
                _check(conn, path)
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            db = cls(conn, path)
            db._checked = checked
            db._migrate(version)
            return db
        except sqlite3.DatabaseError as error:
            conn.close()
            raise StartupError(
                f"cannot open Cairn's database at '{path}': {error}. Nothing was changed."
            ) from error
        except BaseException:
            conn.close()
            raise

    def _migrate(self, version: int) -> None:
        """Every step from *version* up, in one transaction under the write lock: another
        process may have migrated while we waited, so the version is read again inside it;
        a crash half-way leaves the old schema, and one backup covers the whole upgrade."""
        if version == SCHEMA_VERSION:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                current = _scalar(self._conn, "PRAGMA user_version")
                if current > 0 and current < SCHEMA_VERSION:
                    self._backup(current)
                for target in range(current + 1, SCHEMA_VERSION + 1):
                    log.info("migrating %s to schema %d", self.path, target)
                    for statement in _statements(MIGRATIONS[target - 1]):
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {max(current, SCHEMA_VERSION)}")
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _backup(self, version: int) -> None:
        """A complete copy beside the database; only a finished copy carries the .bak name,
        and two processes (or two migrations in one second) never share a name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        unique = f"{os.getpid()}-{secrets.token_hex(3)}"
        target = self.path.with_name(f"cairn-v{version}-{stamp}-{unique}.db.bak")
        partial = self.path.with_name(f".cairn-v{version}-{unique}.partial")
        # Our connection holds the write lock, and SQLite will not back up from a connection
        # that is writing: a second connection reads the committed state meanwhile.
        source = sqlite3.connect(self.path, isolation_level=None)
        dest = sqlite3.connect(partial, isolation_level=None)
        try:
            source.backup(dest)
            dest.execute("PRAGMA journal_mode=DELETE").fetchall()  # one file: no -wal, -shm
        finally:
            dest.close()
            source.close()
        locations.make_private(partial)
        os.replace(partial, target)
        log.info("backed up %s to %s before migrating", self.path, target)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._readers_lock:
            self._closed = True
            readers, self._reader_list = self._reader_list, []
        for reader in readers:
            reader.close()

    def check(self) -> None:
        """The integrity check :meth:`open` left for later: a :class:`StartupError` naming
        the problem, on a connection of its own (it never holds up a writer).  Once it has
        passed (here or at open), it is not run again."""
        if self._checked:
            return
        conn = self.load_connection()
        try:
            _check(conn, self.path)
        finally:
            conn.close()
        self._checked = True

    def load_connection(self) -> sqlite3.Connection:
        """A read-only connection of the caller's own, usable from any thread (one thread at
        a time): a start-up that reads in pages keeps one read transaction open on it, so
        that every page comes from the snapshot the first page saw.  The caller closes it."""
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if self._trace is not None:
            conn.set_trace_callback(self._trace)
        return conn

    # ----------------------------------------------------------------- reading and writing

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One SELECT on this thread's read connection: it sees every committed change and
        never waits for a writer (WAL)."""
        return self._reader().execute(sql, params).fetchall()

    def _reader(self) -> sqlite3.Connection:
        reader: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if reader is not None:
            return reader
        with self._readers_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            reader.execute("PRAGMA query_only=ON")  # a read connection can never write
            reader.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if self._trace is not None:
                reader.set_trace_callback(self._trace)
            self._reader_list.append(reader)
        self._readers.conn = reader
        return reader

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several SELECTs that see one consistent state."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error.

        SQLite's own failures (another process holding the write lock past the busy timeout,
        a full disk) become a :class:`StorageError` sentence; nothing of the change is kept.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as error:
                raise StorageError(_storage_sentence(error)) from error

    @staticmethod
    def data_version(conn: sqlite3.Connection) -> int:
        """Changes when *another* connection commits; our own commits leave it alone.

        Ask it on the connection a :meth:`write` or :meth:`snapshot` yielded.
        """
        return _scalar(conn, "PRAGMA data_version")

    def set_trace(self, callback: Callable[[str], object] | None) -> None:
        """Install a ``sqlite3`` trace callback on every connection, the read connections
        included (tests count storage reads with it)."""
        self._trace = callback
        self._conn.set_trace_callback(callback)
        with self._readers_lock:
            for reader in self._reader_list:
                reader.set_trace_callback(callback)


def _check(conn: sqlite3.Connection, path: Path) -> None:
    problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        backups = sorted(path.parent.glob("cairn-v*.db.bak"))
        hint = (f" The backups beside it ({', '.join(b.name for b in backups[-3:])}) "
                "hold earlier copies." if backups else "")
        raise StartupError(
            f"Cairn's database at '{path}' failed its integrity check "
            f"({problems[0]}); nothing was changed.{hint}"
        )


def _storage_sentence(error: sqlite3.OperationalError) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        return ("Cairn's data is busy: another Cairn window or command is saving a change. "
                "Nothing was changed; try again in a moment.")
    if "full" in text:
        return "Cairn could not save the change: the disk is full. Nothing was changed."
    return f"Cairn could not save the change ({text}). Nothing was changed."


_HEADER = b"SQLite format 3\x00"


def _create_if_missing(path: Path) -> None:
    """Make a fresh, fully migrated database appear at *path* in one step, or leave it be.

    Built beside it and linked into place: another process never sees a half-made (0-byte)
    file, and of several processes starting on a fresh folder exactly one database wins.
    """
    if path.exists():
        return
    fresh = path.with_name(f".{DB_NAME}.{os.getpid()}-{secrets.token_hex(3)}.new")
    try:
        conn = sqlite3.connect(fresh, isolation_level=None)
        locations.make_private(fresh)  # before the first write: its -wal takes this mode
        try:
            # WAL is kept in the file's header: the database arrives in WAL mode, so that
            # several processes starting on it never race to switch it.
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("BEGIN IMMEDIATE")
            for script in MIGRATIONS:
                for statement in _statements(script):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(fresh, path)  # fails if another process got there first: theirs stands
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: the same, less atomically
            if not path.exists():
                os.replace(fresh, path)
    except (OSError, sqlite3.Error) as error:
        raise StartupError(f"cannot create Cairn's database at '{path}': {error}") from error
    finally:
        try:
            fresh.unlink()
        except FileNotFoundError:
            pass


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a database from before WAL, or made elsewhere).  The switch needs the
    database to itself and SQLite does not wait for it, so another process opening the same
    file at that moment is waited for here, up to the usual busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            # Read to the end: a statement left unfinished would keep its lock.
            if conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]:
                return
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as error:
            busy = "locked" in str(error) or "busy" in str(error)
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _refuse_if_not_a_database(path: Path) -> None:
    """An existing file that is empty or has no SQLite header is never taken for a fresh
    start: that would hide every workspace and chat without a word."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(_HEADER))
    except OSError as error:
        raise StartupError(f"cannot read Cairn's database at '{path}': "
                           f"{(error.strerror or str(error)).lower()}") from error
    if head == _HEADER:
        return
    what = "is empty (0 bytes)" if not head else "is not a SQLite database"
    raise StartupError(f"Cairn's database at '{path}' {what}, so it cannot hold your workspaces "
                       "and chats; nothing was changed. Move it away to start afresh, or put "
                       "back a backup (cairn-v*.db.bak) if there is one.")


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration script, to run one by one inside our own transaction
    (``executescript`` would commit first)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending
            pending = ""
    if pending.strip() and not all(line.strip().startswith("--") or not line.strip()
                                   for line in pending.splitlines()):
        yield pending


def _scalar(conn: sqlite3.Connection, sql: str) -> int:
    # fetchall, not fetchone: a statement left unfinished keeps its read lock, and two
    # processes migrating at once would then deadlock on the write lock.
    rows = conn.execute(sql).fetchall()
    return int(rows[0][0]) if rows else 0
