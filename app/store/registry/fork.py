"""Fork from here (DESIGN §13): a new chat in the same workspace holding the path from the
first message down to a chosen message, written in one transaction with the chat's record.

The copies are new messages (ids after every other, parents before children, so the path
holds as a path) marked ``copied_from`` the message each copies.  They carry no tokens and
no cost: those were paid once, in the chat they came from, and a total over the workspace
never counts them twice.  The fork's knowledge watermark stands at its last message: what it
copied is never learned again from the fork; its own new exchanges are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.base.db import utc_now
from app.base.ids import new_id
from app.base.titles import MAX_TITLE, one_line
from app.errors import Refused
from app.events import ChatAdded
from app.records import Chat
from app.store.registry.chat_list import ChatLists

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

FORK_SUFFIX = " (fork)"


def fork_title(title: str) -> str:
    """"<title> (fork)", the title cut (never the suffix) to fit a title's length."""
    room = MAX_TITLE - len(FORK_SUFFIX)
    base = title if len(title) <= room else title[: room - 1].rstrip() + "…"
    return one_line(base + FORK_SUFFIX)


def fork_chat(registry: Registry, chat_id: str, message_id: int) -> Chat:
    """The new chat (it shows at the top of its workspace's chats, or in Ungrouped with the
    source's folder).  Refused in one sentence, nothing written, for an unknown chat or a
    message it does not hold."""
    verb = f"cannot fork session '{chat_id}'"
    source = registry.get_chat(chat_id, verb="fork")
    with registry.writer.changing() as events:
        with registry.writer.writing() as conn:
            if not conn.execute("SELECT 1 FROM message WHERE chat_id = ? AND id = ?",
                                (chat_id, message_id)).fetchall():
                raise Refused(f"{verb} from message {message_id}: the session holds no such "
                              "message")
            now = utc_now()
            chat = Chat(id=new_id("ch"), title=fork_title(source.title), folder=source.folder,
                        workspace_id=source.workspace_id, created_at=now, updated_at=now)
            ChatLists.insert_chat(conn, chat)
            # The path up to the message, copied in one statement: the k-th message of the
            # path (from the first, k = 1) gets id base + k and the one before it as parent.
            base = conn.execute("SELECT coalesce(max(id), 0) FROM message").fetchone()[0]
            conn.execute(
                "WITH RECURSIVE up(id) AS (SELECT ? UNION ALL SELECT m.parent_id FROM message"
                " AS m JOIN up ON m.id = up.id WHERE m.parent_id < m.id),"
                " path AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM up)"
                " INSERT INTO message (id, chat_id, role, content, status, error, model,"
                " input_tokens, cache_write_tokens, cache_read_tokens, output_tokens, cost_usd,"
                " created_at, output_estimated, search_text, parent_id, copied_from)"
                " SELECT ? + path.k, ?, m.role, m.content, m.status, m.error, m.model,"
                " NULL, NULL, NULL, NULL, NULL, m.created_at, 0, m.search_text,"
                " CASE WHEN path.k = 1 THEN NULL ELSE ? + path.k - 1 END, m.id"
                " FROM path JOIN message AS m ON m.id = path.id ORDER BY path.k",
                (message_id, base, chat.id, base))
            last = conn.execute("SELECT max(id) FROM message WHERE chat_id = ?",
                                (chat.id,)).fetchone()[0]
            conn.execute("UPDATE chat SET leaf_id = ?, knowledge_watermark = ? WHERE id = ?",
                         (last, last, chat.id))
        events.append(ChatAdded(chat.id, chat.workspace_id, registry.mem.add_chat(chat), chat))
    return chat
