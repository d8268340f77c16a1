"""Claude reads the project's folder, when the person allows it.

Off by default (spec 004: a folder is only referenced).  On, for a project and every folder
under it, a turn offers two tools: ``listFolder`` (names, kinds, sizes, a page at a time) and
``readFolderFile`` (text in pages like ``readWorkspaceFile``; PDFs and images as document or
image blocks within the API's limits).  Every path goes through the rule of
:mod:`app.base.inside`; hidden files and folders and likely secrets are neither listed nor
read unless the person allowed them, and ``.gitignore`` rules are honoured (``pathspec``: the
same matching git does, negations and directory rules included).  A file is read from the
handle that was checked: one swapped meanwhile is refused.  Each refusal is a ``tool_result``
with ``is_error`` and one sentence; nothing outside the folder is ever read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from app.base import inside
from app.base.inside import Inside, parts_of, resolve_inside, within
from app.base.paths import shown
from app.errors import Refused
from app.store.files import (
    MAX_IMAGE_BYTES,
    MAX_PDF_BYTES,
    FileStore,
    file_name,
    human_size,
    image_type,
)
from app.store.folder_access import FolderStore
from app.store.registry.registry import Registry
from app.tools import (
    MAX_RESULT_BYTES,
    WORKER,
    ToolChat,
    ToolOutput,
    summary_line,
    text_page,
    too_large,
)

LIST_PAGE = 200  # entries per listFolder page
MAX_TEXT_BYTES = 8_000_000  # a text file read in pages: past this, refused

LIST_TOOL: dict[str, Any] = {
    "name": "listFolder",
    "description": (
        "List the files and folders in this project's folder on the person's computer "
        "(read-only). `path` is relative to the project's folder (default: the folder "
        "itself). Each entry has its name, kind and size; long listings come in pages."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A folder relative to the project's "
                                                      "folder, e.g. notes/2026."},
            "page": {"type": "integer", "minimum": 1, "description": "Page, from 1."},
        },
    },
}
READ_FOLDER_TOOL: dict[str, Any] = {
    "name": "readFolderFile",
    "description": (
        "Read a file in this project's folder on the person's computer (read-only), by its "
        "path relative to the project's folder (as listFolder shows it). Large text files "
        "come in pages: the first page says how many there are; pass `page` to read further."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A file relative to the project's "
                                                      "folder, e.g. notes/plan.md."},
            "page": {"type": "integer", "minimum": 1, "description": "Page of a large text "
                                                                     "file, from 1."},
        },
        "required": ["path"],
    },
}
TOOL_NAMES = (LIST_TOOL["name"], READ_FOLDER_TOOL["name"])


# ----------------------------------------------------------------- the switch


def access(registry: Registry, folders: FolderStore, ws_id: str | None
           ) -> tuple[bool, tuple[str, ...]]:
    """Whether Claude may read the folder of *ws_id*'s project, and what hidden or secret
    paths the person allowed (project-wide: set on the project)."""
    lineage = registry.lineage(ws_id)
    if not lineage:
        return False, ()
    choices = folders.get(lineage[0].id)
    return choices.folder_access, choices.allow


def switch_access(registry: Registry, folders: FolderStore, ws_id: str, on: bool, *,
                  allow: list[str] | None = None) -> None:
    """Turn folder access on or off for the project *ws_id* (a folder inside a project is
    refused: the switch covers the whole project)."""
    ws = registry.get_workspace(ws_id, verb="change the folder access of")
    lineage = registry.lineage(ws.id)
    if lineage and lineage[0].id != ws.id:
        raise Refused(f"cannot change the folder access of '{ws.id}': it is a folder of the "
                      f"project '{lineage[0].id}', and folder access is set for the whole "
                      "project")
    if allow is not None:
        for entry in allow:
            problem = parts_of(entry)
            if isinstance(problem, str) or not problem:
                raise Refused(f"cannot allow '{shown(entry)}': "
                              f"{problem if isinstance(problem, str) else 'name a path in the folder'}")
        folders.set_allow(ws.id, ["/".join(p) for p in (parts_of(a) for a in allow)
                                  if isinstance(p, tuple)])
    folders.set_folder_access(ws.id, on)


def tools_for(registry: Registry, folders: FolderStore, ws_id: str | None
              ) -> list[dict[str, Any]]:
    """The folder tools a turn in *ws_id* offers: none unless the person allowed it."""
    on, _allow = access(registry, folders, ws_id)
    if not on:
        return []
    root = registry.lineage(ws_id)[0]
    return [LIST_TOOL, READ_FOLDER_TOOL] if os.path.isdir(root.path) else []


# ----------------------------------------------------------------- what may be seen


def _allowed(parts: tuple[str, ...], allow: Iterable[str]) -> bool:
    joined = "/".join(parts)
    return any(joined == a or joined.startswith(a + "/") for a in allow)


def private(parts: tuple[str, ...], allow: Iterable[str]) -> bool:
    """Hidden (a segment starting with a dot) or a likely secret (``inside.SECRETS``), and
    not allowed."""
    if _allowed(parts, allow):
        return False
    for part in parts:
        if part.startswith("."):
            return True
        if inside.is_secret(part):
            return True
    return False


@lru_cache(maxsize=256)
def _spec(path: str, identity: tuple[int, int, int], fold: bool) -> Any:
    import pathspec

    lines = inside.read_gitignore(Path(path))  # bounded, never through a link
    if isinstance(lines, str):
        return lines
    return pathspec.GitIgnoreSpec.from_lines([line.lower() for line in lines] if fold
                                             else lines)


def ignored(root: Path, parts: tuple[str, ...], is_dir: bool) -> str | None:
    """Does a ``.gitignore`` of the folder (at its root or in a folder on the way) leave
    *parts* out?  Each file's rules apply to paths below its own folder, as git reads them.
    The reason when it does (one that cannot be read leaves its folder's contents out), in
    any letter case on a disk that ignores case."""
    fold = bool(parts) and inside.ignores_case(str(root))
    for depth in range(len(parts)):
        here = root.joinpath(*parts[:depth]) / ".gitignore"
        checked = inside.gitignore_lines(here)
        if checked is None:
            continue
        spec = checked if isinstance(checked, str) else _spec(str(here), checked, fold)
        if isinstance(spec, str):
            return (f"the .gitignore of its folder {spec}, so Cairn cannot tell what it "
                    "leaves out")
        rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
        if spec.match_file(rel.lower() if fold else rel):
            return "the folder's .gitignore leaves it out"
        # A folder on the way that is ignored hides everything below it.
        for cut in range(depth + 1, len(parts)):
            way = "/".join(parts[depth:cut]) + "/"
            if spec.match_file(way.lower() if fold else way):
                return "the folder's .gitignore leaves it out"
    return None


# ----------------------------------------------------------------- the tools


class FolderReader:
    """Answers the folder tools for a turn in a workspace of one project."""

    def __init__(self, registry: Registry, folders: FolderStore, files: FileStore) -> None:
        self._registry = registry
        self._folders = folders
        self._files = files

    def tools(self, ws_id: str | None) -> list[dict[str, Any]]:
        return tools_for(self._registry, self._folders, ws_id)

    def answer(self, ws_id: str | None, name: str, tool_input: dict[str, Any], *,
               limit: int = MAX_RESULT_BYTES) -> tuple[list[dict[str, Any]], bool]:
        output = self.output(ws_id, name, tool_input, limit=limit)
        return output.content, output.is_error

    def output(self, ws_id: str | None, name: str, tool_input: dict[str, Any], *,
               limit: int = MAX_RESULT_BYTES) -> ToolOutput:
        """:meth:`answer` as the toolbox takes it: whether *limit* cut it, too."""
        found = self._answer(ws_id, name, tool_input, limit)
        return found if isinstance(found, ToolOutput) else ToolOutput(*found)

    def _answer(self, ws_id: str | None, name: str, tool_input: dict[str, Any], limit: int
                ) -> ToolOutput | tuple[list[dict[str, Any]], bool]:
        on, allow = access(self._registry, self._folders, ws_id)
        if not on:
            return _error("Folder access is off for this project: the person has not allowed "
                          "Claude to read its folder.")
        root = self._registry.lineage(ws_id)[0].path
        path = tool_input.get("path", "")
        page = tool_input.get("page", 1)
        if not isinstance(path, str):
            return _error("path must be text, relative to the project's folder.")
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            return _error("page must be a whole number from 1.")
        if name == LIST_TOOL["name"]:
            return _within(self._list(root, path, page, allow), limit)
        return self._read(root, path, page, allow, limit)

    def _check(self, root: str, path: str, allow: tuple[str, ...]) -> Inside | str:
        found = resolve_inside(root, path)
        if isinstance(found, str):
            return found
        for parts in {found.parts, found.real_parts}:
            if private(parts, allow):
                return ("it is hidden or may hold secrets, and the person has not allowed "
                        "it")
            left_out = ignored(Path(root), parts, found.is_dir)
            if left_out:
                return left_out
        return found

    def _list(self, root: str, path: str, page: int, allow: tuple[str, ...]
              ) -> tuple[list[dict[str, Any]], bool]:
        shown_path = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
        found = self._check(root, path, allow)
        if isinstance(found, str):
            return _error(f"Cannot list '{_name(path or '.')}': {found}.")
        if not found.is_dir:
            return _error(f"Cannot list '{_name(shown_path)}': it is a file; read it with "
                          "readFolderFile.")
        own = inside.gitignore_lines(found.real / ".gitignore")  # (those above: _check's)
        if isinstance(own, str):
            return _error(f"Cannot list '{_name(shown_path or '.')}': its .gitignore {own}, "
                          "so Cairn cannot tell what it leaves out.")
        entries: list[tuple[int, str, str]] = []
        real_root = os.path.realpath(root)
        try:
            with inside.scan(found.real) as listing:  # at most MAX_LISTED looked at
                for item in listing:
                    parts = (*found.parts, item.name)
                    if private(parts, allow):
                        continue
                    try:
                        st = item.stat()  # follows links: what it leads to
                    except OSError:
                        continue
                    if not within(os.path.realpath(item.path), real_root):
                        continue  # a link out of the folder is not shown at all
                    is_dir = stat.S_ISDIR(st.st_mode)
                    if not is_dir and not stat.S_ISREG(st.st_mode):
                        continue  # devices, pipes, sockets
                    if inside.hard_linked(st) or ignored(Path(root), parts, is_dir):
                        continue  # (a hard link is not read: it is not offered either)
                    kind = "folder" if is_dir else "file"
                    entries.append((0 if is_dir else 1, item.name,
                                    kind if is_dir else f"file, {human_size(st.st_size)}"))
        except OSError:
            return _error(f"Cannot list '{_name(shown_path or '.')}': it cannot be read.")
        entries.sort(key=lambda e: (e[0], e[1].lower(), e[1]))
        pages = max(1, -(-len(entries) // LIST_PAGE))
        if page > pages:
            return _error(f"The listing of '{_name(shown_path or '.')}' has {pages} "
                          f"page{'s' if pages > 1 else ''}.")
        chunk = entries[(page - 1) * LIST_PAGE: page * LIST_PAGE]
        where = (shown_path + "/") if shown_path else "the project's folder"
        head = f"[Listed {_name(where)} — {len(entries)} entr{'ies' if len(entries) != 1 else 'y'}"
        if listing.more:  # (a 100,000-entry folder is not walked on every page)
            head += (f"; only the first {inside.MAX_LISTED:,} of the folder's entries were "
                     "looked at, and it holds more: name a file or a folder in it to reach "
                     "the others")
        head += f", page {page} of {pages}; read page {page + 1} next]" if page < pages else "]"
        prefix = shown_path + "/" if shown_path else ""
        lines = [f"{_name(prefix + name)}{'/' if kind == 'folder' else ''}  ({kind})"
                 for _order, name, kind in chunk]
        return [{"type": "text", "text": "\n".join([head, *lines])}], False

    def _read(self, root: str, path: str, page: int, allow: tuple[str, ...], limit: int
              ) -> ToolOutput | tuple[list[dict[str, Any]], bool]:
        shown_path = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
        if not shown_path:
            return _error("readFolderFile needs a path, e.g. notes/plan.md.")
        found = self._check(root, path, allow)
        if isinstance(found, str):
            return _error(f"Cannot read '{_name(path)}': {found}.")
        if found.is_dir:
            return _error(f"Cannot read '{_name(shown_path)}': it is a folder; list it with "
                          "listFolder.")
        handle = _open_checked(found)
        if isinstance(handle, str):
            return _error(f"Cannot read '{_name(shown_path)}': {handle}.")
        name = _name(shown_path)
        with handle:
            head = handle.read(32)
            size = os.fstat(handle.fileno()).st_size
            image = image_type(head)
            if image is not None or head.startswith(b"%PDF-"):
                most = MAX_IMAGE_BYTES if image is not None else MAX_PDF_BYTES
                if size > most:
                    return _error(f"Cannot read '{name}': it is {human_size(size)}, more than "
                                  f"the model takes ({human_size(most)}).")
                if size > limit:  # never read whole what the turn may not hold
                    return too_large(name, size, limit)
                data = head + handle.read(most + 1 - len(head))
                if len(data) > min(most, limit):  # it grew since it was looked at
                    return _error(f"Cannot read '{name}': it changed while it was being "
                                  "read; ask again.")
                sha = self._files.blobs.put(data)  # kept like an attachment, expanded when sent
                return [{"type": "attachment", "name": name,
                         "media_type": image or "application/pdf", "size": len(data),
                         "sha256": sha}], False
            if size > MAX_TEXT_BYTES:
                return _error(f"Cannot read '{name}': it is {human_size(size)}, too large to "
                              "read here.")
            handle.seek(0)
            output = text_page(name, handle, page, limit=limit, size=size)  # a page at a time
        if output is None:
            return _error(f"Cannot read '{name}': it is not text, a PDF or an image.")
        return output  # (cut or not at what the turn has left: the toolbox is told)


def _open_checked(found: Inside) -> BinaryIO | str:
    """A handle on the file checked (same device and inode, a regular file, not a link
    swapped in), to read it from; else why not."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(found.real, flags)
    except OSError:
        return "it changed or cannot be read"
    handle = os.fdopen(fd, "rb")
    st = os.fstat(handle.fileno())
    if (st.st_dev, st.st_ino) != found.identity or not stat.S_ISREG(st.st_mode):
        handle.close()
        return "it changed while it was being read; ask again"
    if inside.hard_linked(st):
        handle.close()
        return inside.HARD_LINK
    if st.st_size > MAX_TEXT_BYTES and st.st_size > MAX_PDF_BYTES:
        handle.close()
        return f"it is {human_size(st.st_size)}, too large to read here"
    return handle


def _name(path: str) -> str:
    return file_name(path)


def _error(text: str) -> tuple[list[dict[str, Any]], bool]:
    return [{"type": "text", "text": text}], True


def _within(listed: tuple[list[dict[str, Any]], bool], limit: int) -> ToolOutput:
    """A listing page cut at what the turn has left (*limit* bytes), saying where, as a text
    page is (:func:`app.tools.text_page`)."""
    output = ToolOutput(*listed)
    if output.size <= limit:
        return output
    note = ("\n[Cut here: this reply's tool results reached Cairn's limit of "
            f"{MAX_RESULT_BYTES // 1_000_000} MB.]")
    text = "".join(str(b.get("text", "")) for b in output.content)
    room = max(0, limit - len(note.encode("utf-8")))
    kept = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    return ToolOutput([{"type": "text", "text": kept + note}], output.is_error, cut=True)


# ----------------------------------------------------------------- the two tools


class _FolderTool:
    """``listFolder`` or ``readFolderFile``: offered in a project whose person allowed
    Claude to read its folder, answered by the :class:`FolderReader`."""

    runs_on = WORKER
    max_result_bytes = MAX_RESULT_BYTES

    def __init__(self, reader: FolderReader, definition: dict[str, Any]) -> None:
        self._reader = reader
        self._definition = definition
        self.name = str(definition["name"])

    def definition(self, chat: ToolChat) -> dict[str, Any] | None:
        offered = self._reader.tools(chat.workspace_id)
        return self._definition if self._definition in offered else None

    def run(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int) -> ToolOutput:
        return self._reader.output(chat.chain_ids[-1] if chat.chain_ids else None,
                                   self.name, tool_input, limit=limit)

    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str:
        return summary_line(output)


def folder_tools(reader: FolderReader) -> list[_FolderTool]:
    return [_FolderTool(reader, LIST_TOOL), _FolderTool(reader, READ_FOLDER_TOOL)]
