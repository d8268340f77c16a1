"""The records an import adds, in one transaction: a workspace per bundle entry at its
folder, with its knowledge, files and chats (``app.sharing.importing`` checks the bundle,
writes the blobs and calls this last; its marker: ``app.store.import_marker``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.base import paths
from app.base.db import utc_now
from app.base.ids import new_id
from app.base.paths import shown
from app.errors import Refused
from app.records import ChatEntry, KnowledgeEntry, Workspace, WorkspaceEntry
from app.store import history as versions
from app.store.blobs import BlobStore
from app.store.blocks import search_text
from app.store.pdf_text import Budget
from app.store.search_index import file_text, index_document, index_file_text

if TYPE_CHECKING:
    from app.store.registry.registry import Registry


def commit_import(registry: Registry, folders: list[paths.Folder],
                  entries: tuple[WorkspaceEntry, ...], chat: Callable[[int], ChatEntry],
                  blobs_needed: frozenset[str], blob: Callable[[str], bytes], pending: int,
                  *, refuse: str, root: str) -> tuple[list[Workspace], int, int]:
    """Every record of an import in one transaction, which also clears its marker: one
    workspace per entry at its folder, their knowledge, files and chats.  *chat* reads the
    bundle's chat number n (checked); each is stored and let go before the next is read, so
    a bundle's chats are never all in memory.  Returns the new workspaces (in bundle order),
    how many files and how many chats arrived."""
    blobs = BlobStore(registry.db.path.parent / "files")
    with registry.writer.changing():
        with registry.writer.writing() as conn:
            for here in folders:
                taken = registry.mem.existing(here)
                if taken is not None:  # another process added it meanwhile
                    raise Refused(f"{refuse} into '{shown(root)}': the folder "
                                  f"'{shown(here.canonical)}' is already the workspace "
                                  f"'{taken.id}'")
            if conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,)).rowcount != 1:
                raise Refused(f"{refuse}: another Cairn undid it while it ran; nothing was "
                              "imported, so try again")
            for sha in sorted(blobs_needed):  # as of this transaction no purge can take one
                if not blobs.path(sha).is_file():
                    blobs.put(blob(sha))
            made: list[Workspace] = []
            # Inserted last to first, each at the top: the list shows them in bundle order.
            for here, entry in reversed(list(zip(folders, entries))):
                ws = registry.writer.insert_workspace(
                    conn, here, at_end=False, title=entry.title, description=entry.description,
                    instructions=entry.instructions, build_status=entry.build_status)
                conn.execute("UPDATE workspace SET created_at = ?, updated_at = ? WHERE id = ?",
                             (entry.created_at, entry.updated_at, ws.id))
                made.insert(0, ws)
            chat_ids = _insert_chats(conn, entries, chat, made)
            files = 0
            budget = Budget()  # all the bundle's PDFs together, not each in turn
            for ws, entry in zip(made, entries):
                _insert_knowledge(conn, ws.id, entry.knowledge, chat_ids)
                for f in entry.files:
                    file_id = new_id("wf")
                    conn.execute(
                        "INSERT INTO knowledge_file (id, workspace_id, name, media_type, size,"
                        " sha256, description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (file_id, ws.id, f.name, f.media_type, f.size, f.sha256,
                         f.description, f.created_at))
                    _index_file(conn, blobs, file_id, f.sha256, f.media_type, f.name, budget)
                    files += 1
            budget.report("an import")
        registry.writer.reload()
    return [registry.get_workspace(ws.id) for ws in made], files, len(chat_ids)


def _insert_chats(conn: sqlite3.Connection, entries: tuple[WorkspaceEntry, ...],
                  read: Callable[[int], ChatEntry], made: list[Workspace]) -> dict[int, str]:
    chat_ids: dict[int, str] = {}
    for ws, entry in zip(made, entries):
        for position, number in enumerate(entry.chats):
            chat = read(number)  # one at a time: the previous one is let go here
            chat_id = chat_ids[number] = new_id("ch")
            conn.execute("INSERT INTO chat (id, title, folder, created_at, updated_at)"
                         " VALUES (?, ?, ?, ?, ?)",
                         (chat_id, chat.title, ws.path, chat.created_at, chat.updated_at))
            conn.execute("INSERT INTO membership (workspace_id, chat_id, position)"
                         " VALUES (?, ?, ?)", (ws.id, chat_id, position))
            ids: list[int] = []
            for m in chat.messages:  # (checked: a parent comes before its replies)
                ids.append(conn.execute(
                    "INSERT INTO message (chat_id, role, content, status, error, model,"
                    " input_tokens, cache_write_tokens, cache_read_tokens, output_tokens,"
                    " cost_usd, created_at, search_text, parent_id)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (chat_id, m.role, json.dumps(m.content, ensure_ascii=False), m.status,
                     m.error, m.model, m.input_tokens, m.cache_write_tokens,
                     m.cache_read_tokens, m.output_tokens, m.cost_usd, m.created_at,
                     search_text(m.content), None if m.parent is None else ids[m.parent]),
                ).lastrowid or 0)
            if chat.leaf is not None:  # the branch it showed
                conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?",
                             (ids[chat.leaf], chat_id))
            if chat.watermark is not None:  # what was learnt is not learnt again
                conn.execute("UPDATE chat SET knowledge_watermark = ? WHERE id = ?",
                             (ids[chat.watermark], chat_id))
    return chat_ids


def _insert_knowledge(conn: sqlite3.Connection, owner: str, knowledge: KnowledgeEntry | None,
                      chat_ids: dict[int, str]) -> None:
    if knowledge is None:
        return
    chat: str | None
    if knowledge.history is None:  # the current text only: version 1 of this document
        version, source, chat, saved_at = 1, "import", None, utc_now()
        versions.add(conn, owner, version, knowledge.text, source, chat, saved_at)
    else:
        version, source = knowledge.version, knowledge.source
        chat = chat_ids.get(knowledge.chat) if knowledge.chat is not None else None
        saved_at = knowledge.updated_at
        versions.add_all(conn, owner, (
            versions.StoredVersion(v.version, v.text, v.source,
                                   chat_ids.get(v.chat) if v.chat is not None else None,
                                   v.saved_at) for v in knowledge.history))
    conn.execute("INSERT INTO knowledge (owner, text, version, updated_at, source, chat_id)"
                 " VALUES (?, ?, ?, ?, ?, ?)",
                 (owner, knowledge.text, version, saved_at, source, chat))
    index_document(conn, owner, knowledge.text, saved_at)


def _index_file(conn: sqlite3.Connection, blobs: BlobStore, file_id: str, sha256: str,
                media_type: str, name: str, budget: Budget) -> None:
    """A file's text into the search index, in the import's transaction."""
    try:
        data = blobs.read(sha256)
    except OSError:
        return
    index_file_text(conn, file_id, file_text(data, media_type, name, budget=budget))
