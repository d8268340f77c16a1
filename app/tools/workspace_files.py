"""``readWorkspaceFile``: Claude reads one of the workspace's knowledge files, by its id.

Only files of the chat's own workspace chain are served (DESIGN §5); a text file in pages, a
PDF or an image as a reference to its stored blob (expanded when the request is sent), within
what the call may still answer.
"""

from __future__ import annotations

from typing import Any

from app.store.files import MAX_IMAGE_BYTES, MAX_PDF_BYTES, FileStore, file_name, image_type
from app.tools import (
    MAX_RESULT_BYTES,
    WORKER,
    ToolChat,
    ToolOutput,
    error,
    summary_line,
    text_page,
    too_large,
)

DEFINITION: dict[str, Any] = {
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


class ReadWorkspaceFile:
    name = DEFINITION["name"]
    runs_on = WORKER
    max_result_bytes = MAX_RESULT_BYTES

    def __init__(self, files: FileStore) -> None:
        self._files = files

    def definition(self, chat: ToolChat) -> dict[str, Any] | None:
        # Nothing to read: no tool to offer.
        return DEFINITION if self._files.of_workspaces(list(chat.chain_ids)) else None

    def run(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int) -> ToolOutput:
        file_id = tool_input.get("file_id")
        page = tool_input.get("page", 1)
        if not isinstance(file_id, str) or not file_id:
            return error("readWorkspaceFile needs a file_id, e.g. wf_a1b2c3d4e5f6.")
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            return error("page must be a whole number from 1.")
        found = next((f for f in self._files.of_workspaces(list(chat.chain_ids))
                      if f.id == file_id), None)
        if found is None:
            return error(f"No file '{file_id}' in this workspace. Use an id from "
                         "AVAILABLE WORKSPACE FILES.")
        name = file_name(found.name)  # as every name enters the prompt: one line
        blobs = self._files.blobs
        try:
            image = image_type(blobs.head(found.sha256, 32))
            if (image is not None and found.size <= MAX_IMAGE_BYTES) or (
                    image is None and found.media_type == "application/pdf"
                    and found.size <= MAX_PDF_BYTES):
                if found.size > limit:
                    return too_large(name, found.size, limit)
                # Stored in the chat by reference (like an attachment), expanded when sent.
                return ToolOutput([{"type": "attachment", "name": name,
                                    "media_type": image or found.media_type,
                                    "size": found.size, "sha256": found.sha256}])
            with open(blobs.path(found.sha256), "rb") as handle:
                output = text_page(name, handle, page, limit=limit)
        except OSError:
            return error(f"The file '{name}' could not be read from Cairn's storage.")
        if output is None:
            return error(f"'{name}' ({found.media_type}) is not text, a PDF or an image, so "
                         "it cannot be read here.")
        return output

    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str:
        return summary_line(output)
