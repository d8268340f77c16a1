"""Knowledge files (uploaded into a workspace, read by the model on demand) and attachments
(sent with one message).

Knowledge files are only *listed* in the context; the model reads one through the
``readWorkspaceFile`` tool, which serves only files of the chat's own workspace chain, in
pages for large text.  An attachment sends the document itself: text as a text block, PDF as
a document block, images as image blocks.
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.blobs import BlobStore
from app.db import Database, utc_now
from app.errors import Refused
from app.ids import new_id

PAGE_CHARS = 20_000  # one readWorkspaceFile page of text (about 5,000 tokens)
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the API's limit per image
MAX_PDF_BYTES = 32 * 1024 * 1024  # the API's limit per request for PDFs
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_SUFFIXES = {
    ".md", ".txt", ".csv", ".tsv", ".json", ".yaml", ".yml", ".toml", ".ini", ".xml", ".html",
    ".css", ".js", ".ts", ".tsx", ".jsx", ".py", ".rs", ".go", ".java", ".c", ".h", ".cpp",
    ".hpp", ".cs", ".rb", ".php", ".swift", ".kt", ".sql", ".sh", ".ps1", ".bat", ".log",
    ".tex", ".rst", ".org", ".svg",
}

READ_TOOL: dict[str, Any] = {
    "name": "readWorkspaceFile",
    "description": (
        "Read one of the workspace knowledge files listed under AVAILABLE WORKSPACE FILES, "
        "by its id. Large text files come in pages: the first page says how many there are; "
        "pass `page` to read further."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "file_id": {"type": "string", "description": "The file's id, e.g. wf_a1b2c3d4e5f6."},
            "page": {"type": "integer", "minimum": 1, "description": "Page of a large text file, from 1."},
        },
        "required": ["file_id"],
    },
}


@dataclass(frozen=True, slots=True)
class KnowledgeFile:
    id: str
    workspace_id: str
    name: str
    media_type: str
    size: int
    sha256: str
    description: str
    created_at: str

    def to_json(self, *, scope: str) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "scope": scope,
                "description": self.description, "media_type": self.media_type,
                "workspace": self.workspace_id, "created_at": self.created_at}


def human_size(size: int) -> str:
    """Sizes as people read them: 512 B, 12.3 KB, 5.0 MB (powers of 1,000, as Finder shows)."""
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1000
        if value < 999.95:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def media_type_of(path: Path) -> str:
    if path.suffix.lower() in TEXT_SUFFIXES:
        return "text/markdown" if path.suffix.lower() == ".md" else "text/plain"
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


class FileStore:
    def __init__(self, db: Database, blobs: BlobStore) -> None:
        self._db = db
        self.blobs = blobs

    # ----------------------------------------------------------------- knowledge files

    def add(self, workspace_id: str, source: Path, *, description: str = "") -> KnowledgeFile:
        """Copy *source* into the workspace's knowledge files."""
        data = _read_source(source, verb="add")
        record = KnowledgeFile(
            id=new_id("wf"), workspace_id=workspace_id, name=source.name,
            media_type=media_type_of(source), size=len(data), sha256=self.blobs.put(data),
            description=" ".join(description.split()), created_at=utc_now(),
        )
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO knowledge_file (id, workspace_id, name, media_type, size, sha256,"
                " description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.workspace_id, record.name, record.media_type, record.size,
                 record.sha256, record.description, record.created_at),
            )
        return record

    def of_workspaces(self, workspace_ids: list[str]) -> list[KnowledgeFile]:
        """The files of these workspaces: in the order given, then oldest first (stable)."""
        if not workspace_ids:
            return []
        marks = ", ".join("?" * len(workspace_ids))
        rows = self._db.query(
            "SELECT id, workspace_id, name, media_type, size, sha256, description, created_at"
            f" FROM knowledge_file WHERE workspace_id IN ({marks}) ORDER BY created_at, id",
            workspace_ids,
        )
        rank = {ws: i for i, ws in enumerate(workspace_ids)}
        files = [KnowledgeFile(*row) for row in rows]
        return sorted(files, key=lambda f: rank[f.workspace_id])

    def read_for_model(self, chain: list[str], tool_input: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
        """Answer a ``readWorkspaceFile`` call: (tool_result content, is_error).

        Only files of the chat's own workspace chain are served; anything else gets an
        error result, never content.
        """
        file_id = tool_input.get("file_id")
        page = tool_input.get("page", 1)
        if not isinstance(file_id, str) or not file_id:
            return _error("readWorkspaceFile needs a file_id, e.g. wf_a1b2c3d4e5f6.")
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            return _error("page must be a whole number from 1.")
        found = next((f for f in self.of_workspaces(chain) if f.id == file_id), None)
        if found is None:
            return _error(f"No file '{file_id}' in this workspace. Use an id from "
                          "AVAILABLE WORKSPACE FILES.")
        try:
            data = self.blobs.read(found.sha256)
        except OSError:
            return _error(f"The file '{found.name}' could not be read from Cairn's storage.")
        if (found.media_type in IMAGE_TYPES and len(data) <= MAX_IMAGE_BYTES) or (
                found.media_type == "application/pdf" and len(data) <= MAX_PDF_BYTES):
            # Stored in the chat by reference (like an attachment), expanded when sent.
            return [{"type": "attachment", "name": found.name, "media_type": found.media_type,
                     "size": found.size, "sha256": found.sha256}], False
        text = _decode(data)
        if text is None:
            return _error(f"'{found.name}' ({found.media_type}) is not text, a PDF or an "
                          "image, so it cannot be read here.")
        pages = max(1, -(-len(text) // PAGE_CHARS))
        if page > pages:
            return _error(f"'{found.name}' has {pages} page{'s' if pages > 1 else ''}.")
        chunk = text[(page - 1) * PAGE_CHARS: page * PAGE_CHARS]
        head = f"[{found.name} — page {page} of {pages}"
        head += f"; read page {page + 1} next]" if page < pages else "]"
        return [{"type": "text", "text": f"{head}\n{chunk}"}], False

    # ----------------------------------------------------------------- attachments

    def attach(self, source: Path) -> dict[str, Any]:
        """Store a file sent with a message; the message keeps this reference."""
        media_type = media_type_of(source)
        data = _read_source(source, verb="attach")
        if media_type in IMAGE_TYPES:
            if len(data) > MAX_IMAGE_BYTES:
                raise Refused(f"cannot attach '{source.name}': images can be at most 5 MB")
        elif media_type == "application/pdf":
            if len(data) > MAX_PDF_BYTES:
                raise Refused(f"cannot attach '{source.name}': PDFs can be at most 32 MB")
        elif _decode(data) is None:
            raise Refused(f"cannot attach '{source.name}': Cairn can send text files, PDFs "
                          "and images (PNG, JPEG, GIF, WebP)")
        return {"type": "attachment", "name": source.name, "media_type": media_type,
                "size": len(data), "sha256": self.blobs.put(data)}

    def expand(self, reference: dict[str, Any]) -> dict[str, Any]:
        """The content block the API receives for a stored attachment."""
        data = self.blobs.read(reference["sha256"])
        media_type = reference["media_type"]
        if media_type in IMAGE_TYPES:
            return _image_block(media_type, data)
        if media_type == "application/pdf":
            return _pdf_block(data, reference["name"])
        return {"type": "text",
                "text": f"<file name=\"{reference['name']}\">\n{_decode(data) or ''}\n</file>"}


def _read_source(source: Path, *, verb: str) -> bytes:
    try:
        if not source.is_file():
            raise Refused(f"cannot {verb} '{source}': it is not a file")
        return source.read_bytes()
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        raise Refused(f"cannot {verb} '{source}': {reason}") from error


def _decode(data: bytes) -> str | None:
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _image_block(media_type: str, data: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                        "data": base64.b64encode(data).decode("ascii")}}


def _pdf_block(data: bytes, name: str) -> dict[str, Any]:
    return {"type": "document", "title": name,
            "source": {"type": "base64", "media_type": "application/pdf",
                       "data": base64.b64encode(data).decode("ascii")}}


def _error(text: str) -> tuple[list[dict[str, Any]], bool]:
    return [{"type": "text", "text": text}], True
