"""Deleted chats: gone from every list and from search at once, kept 30 days, restorable.

Deleting a chat (the window's Delete chat…, ``cairn chat delete``) writes a ``removed_chat``
row beside it in one transaction that also takes it out of its workspace and Pinned: the
registry no longer loads it, search no longer finds it, the rebuild no longer learns from it.
Its messages stay, so Restore brings it back whole (at the top of the workspace it was in,
or Ungrouped when that workspace is gone; an archived chat comes back unarchived).  What a
rebuild learned from it stays in the knowledge document and its history: deleting a chat
never rewrites knowledge.  After :data:`KEEP_DAYS` the purge at start-up deletes the chat,
its messages and the attachments no other record uses.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from app.base import paths
from app.base.db import utc_now
from app.errors import Refused
from app.events import ChatAdded, ChatRemoved, ChatUnpinned
from app.records import Chat
from app.store.registry.memory import Memory
from app.store.registry.removed import KEEP_DAYS, _parse, _stamp
from app.store.registry.state import RegistryState

log = logging.getLogger(__name__)

_SHA = re.compile(r'"sha256"\s*:\s*"([0-9a-f]{64})"')


@dataclass(frozen=True, slots=True)
class RemovedChat:
    id: str
    title: str
    workspace_id: str | None  # where it was (None: Ungrouped)
    workspace_title: str | None  # that workspace's title, while it is on the list
    messages: int
    removed_at: str

    @property
    def purge_after(self) -> str:
        return _stamp(_parse(self.removed_at) + timedelta(days=KEEP_DAYS))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "workspace": self.workspace_id,
                "workspace_title": self.workspace_title, "messages": self.messages,
                "removed_at": self.removed_at, "purge_after": self.purge_after}


def _no_chat(chat_id: str) -> Refused:
    return Refused(f"cannot delete chat '{paths.shown(chat_id)}': no such chat")


class RemovedChats:
    """Delete chat, the recently removed chats, their Restore and their purge."""

    def __init__(self, mem: Memory, writer: RegistryState) -> None:
        self.mem = mem
        self.writer = writer

    def remove_chat(self, chat_id: str, *, stop: bool = False) -> Chat:
        """Delete a chat (kept among the recently removed chats for 30 days).

        Refused while a reply or a knowledge update runs in it, unless *stop*: then it is
        deleted first and the work is asked to stop (as Stop and archive does).
        """
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                chat = self.mem.chats.get(chat_id)
                if chat is None:
                    raise _no_chat(chat_id)
                kinds = self.writer.fence(chat_id)  # no turn can start until the delete is done
                if kinds and not stop:
                    raise Refused(f"cannot delete chat '{chat.title}': a reply or a knowledge "
                                  "update is running in it; stop it first")
                ws_id = chat.workspace_id
                position = None
                if ws_id is not None:
                    row = conn.execute("SELECT position FROM membership WHERE chat_id = ?",
                                       (chat_id,)).fetchone()
                    position = row[0] if row else None
                    conn.execute("DELETE FROM membership WHERE chat_id = ?", (chat_id,))
                if chat.pinned:
                    conn.execute("UPDATE chat SET pin_seq = NULL WHERE id = ?", (chat_id,))
                # After its membership went: the trigger takes it out of Ungrouped's count.
                conn.execute("INSERT INTO removed_chat (chat_id, workspace_id, position,"
                             " removed_at) VALUES (?, ?, ?, ?)",
                             (chat_id, ws_id, position, utc_now()))
            if chat.pinned:
                events.append(ChatUnpinned(chat_id, self.mem.pinned.remove(chat_id)))
            row_in: int | None = None
            archived_row: int | None = None
            if chat.archived:
                archived_row = self.mem.archived.remove(chat_id)
            else:
                row_in = self.mem.home(chat).remove(chat_id)
            if ws_id is not None:
                self.mem.members[ws_id].remove(chat_id)
            del self.mem.chats[chat_id]
            self.mem.seq.pop(chat_id, None)
            events.append(ChatRemoved(chat_id, ws_id, row_in, archived_row))
        if stop and kinds:
            self.writer.live.stop(chat_id)
        return chat

    def removed_chats(self) -> list[RemovedChat]:
        """The recently removed chats, most recently removed first (a storage read)."""
        rows = self.writer.db.query(
            "SELECT r.chat_id, c.title, r.workspace_id, w.title, r.removed_at,"
            " (SELECT count(*) FROM message m WHERE m.chat_id = r.chat_id)"
            " FROM removed_chat r JOIN chat c ON c.id = r.chat_id"
            " LEFT JOIN workspace w ON w.id = r.workspace_id"
            " ORDER BY r.removed_at DESC, r.rowid DESC")
        return [RemovedChat(id=chat_id, title=title, workspace_id=ws_id, workspace_title=ws,
                            messages=count, removed_at=removed)
                for chat_id, title, ws_id, ws, removed, count in rows]

    def restore_chat(self, chat_id: str) -> Chat:
        """Bring a recently removed chat back: at the top of the workspace it was in (when
        that workspace is still on the list), otherwise Ungrouped; unarchived, unpinned."""
        plausible = chat_id.isascii() and chat_id.isprintable()  # ids are: never ask SQLite
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                row = conn.execute(
                    "SELECT r.workspace_id, c.title, c.folder, c.created_at FROM removed_chat r"
                    " JOIN chat c ON c.id = r.chat_id WHERE r.chat_id = ?",
                    (chat_id,)).fetchone() if plausible else None
                if row is None:
                    raise Refused(f"cannot restore chat '{paths.shown(chat_id)}': it is not among the "
                                  "recently removed chats")
                ws_id, title, folder, created = row
                home = self.mem.workspaces.get(ws_id) if ws_id is not None else None
                now = utc_now()
                conn.execute("DELETE FROM removed_chat WHERE chat_id = ?", (chat_id,))
                conn.execute("UPDATE chat SET archived_at = NULL, updated_at = ? WHERE id = ?",
                             (now, chat_id))
                if home is not None:
                    conn.execute(
                        "INSERT INTO membership (workspace_id, chat_id, position)"
                        " SELECT ?, ?, coalesce(min(position), 1) - 1 FROM membership"
                        " WHERE workspace_id = ?", (home.id, chat_id, home.id))
            chat = Chat(id=chat_id, title=title, folder=folder,
                        workspace_id=home.id if home is not None else None,
                        created_at=created, updated_at=now)
            events.append(ChatAdded(chat_id, chat.workspace_id, self.mem.add_chat(chat), chat))
        return chat

    def purge_removed_chats(self, *, now: datetime | None = None) -> list[str]:
        """Delete the chats removed more than :data:`KEEP_DAYS` ago, their messages, and
        then the attachments no record uses any more (as the workspaces' purge does)."""
        cutoff = _stamp((now or datetime.now(timezone.utc)) - timedelta(days=KEEP_DAYS))
        if not self.writer.db.query("SELECT 1 FROM removed_chat WHERE removed_at < ? LIMIT 1",
                             (cutoff,)):
            return []  # the usual start: one indexed look
        with self.writer.db.write() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT chat_id FROM removed_chat WHERE removed_at < ?", (cutoff,))]
            if not ids:
                return []
            marks = ", ".join("?" * len(ids))
            shas = sorted({sha for (content,) in conn.execute(
                f"SELECT content FROM message WHERE chat_id IN ({marks})"  # noqa: S608
                " AND instr(content, '\"sha256\"') > 0", ids) for sha in _SHA.findall(content)})
            # The removed rows first (each counts its chat again), then the chats: their
            # delete uncounts them and takes their messages and index rows along.
            conn.execute(f"DELETE FROM removed_chat WHERE chat_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM chat WHERE id IN ({marks})", ids)
            pending = conn.execute(
                "INSERT INTO pending_change (op, args) VALUES ('drop-blobs', ?)",
                (json.dumps({"blobs": shas}),)).lastrowid
        log.info("purged %d chat(s) removed before %s", len(ids), cutoff)
        self.writer.drop_blobs(pending, shas)
        return ids
