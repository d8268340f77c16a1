"""The child process of tests/process/test_search_crash.py: writes everything the search
index follows (messages, edits, chat titles, archive, knowledge, files: text and PDF) until
it is killed.

Usage: ``python search_writer.py SEED FOLDER`` with ``CAIRN_DATA_DIR`` naming the data folder;
prints ``READY`` once open and ``OK <n>`` after each write committed.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from app.store.blobs import BlobStore
from app.store.documents import KnowledgeStore
from app.store.files import FileStore
from app.store.messages import ChatStore
from app.store.registry.registry import Registry
from tests.pdfs import make_pdf

WORDS = ("harbour", "invoice", "lantern", "meadow", "quartz", "supplier", "tomato", "velvet")


def main(seed: int, folder: str) -> None:
    rng = random.Random(seed)
    registry = Registry.open()
    db = registry.db
    chats, knowledge = ChatStore(db), KnowledgeStore(db)
    files = FileStore(db, BlobStore(db.path.parent / "files"))
    ws, _ = registry.add_workspace(folder)
    sources = Path(folder)
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    n = 0
    while True:
        n += 1
        words = " ".join(rng.choice(WORDS) for _ in range(6)) + f" n{n}"
        listed = registry.chats_of(ws.id)
        kind = rng.randrange(7)
        if kind == 0 or not listed:
            registry.new_chat(folder=folder, title=f"chat {words}")
        elif kind == 1:
            registry.rename_chat(rng.choice(listed).id, f"renamed {words}")
        elif kind == 2:
            chat = rng.choice(listed)
            mine = [m for m in chats.messages(chat.id) if m.from_person]
            if mine:
                chats.resend(chat.id, rng.choice(mine).id, f"edited {words}")
            else:
                chats.append(chat.id, "user", [{"type": "text", "text": words}])
        elif kind == 3:
            knowledge.save(ws.id, f"## Facts\n\n- {words}\n- {rng.choice(WORDS)}\n",
                           source="user")
        elif kind == 4:
            if n % 2:
                source = sources / f"file{n}.txt"
                source.write_text(words, encoding="utf-8")
            else:  # a PDF's text goes through the same index write as a text file's
                source = sources / f"file{n}.pdf"
                source.write_bytes(make_pdf(words))
            files.add(ws.id, source, description=rng.choice(WORDS))
        elif kind == 5:
            present = files.of_workspaces([ws.id])
            if present:
                files.remove(rng.choice(present).id)
        else:
            chats.append(rng.choice(listed).id, rng.choice(("user", "assistant")),
                         [{"type": "text", "text": words}])
        out.write(f"OK {n}\n")
        out.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
