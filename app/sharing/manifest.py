"""The manifest of a ``.cairn`` bundle: the records it describes and their checks, field by
field (the format itself is described in ``app.sharing.bundle``).

Every field is known, present and of its type (pydantic models: ``manifest_schemas``); text is UTF-8; times, statuses, sources and
hashes have their form; a folder's path stays inside the workspace on every system.  The
first failure is one sentence through *refuse*.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from app.base.paths import shown
from app.base.titles import (
    MAX_DESCRIPTION,
    MAX_LINE,
    MAX_NAME,
    one_line,
    text_lines,
    visible,
)
from app.records import (
    BUILD_STATUSES,
    ChatEntry,
    FileEntry,
    KnowledgeEntry,
    MessageEntry,
    VersionEntry,
    WorkspaceEntry,
)
from app.store.documents import MAX_DOCUMENT_BYTES, SOURCES
from app.store.files import MAX_FILE_BYTES
from app.store.messages import ContentProblem, checked_content, kind_of

FORMAT = "cairn-bundle"
FORMAT_VERSION = 2  # 2: a chat is a tree (each message's parent, the chat's leaf)
MAX_DEPTH = 32  # folders within folders

SHA = re.compile(r"[0-9a-f]{64}")
CHAT_MEMBER = re.compile(r"chats/(0|[1-9][0-9]{0,8})\.json")
DRIVE = re.compile(r"[A-Za-z]:")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ROLES = ("user", "assistant")
STATUSES = ("complete", "stopped", "failed")

Refuse = Callable[[str], NoReturn]
ReadJson = Callable[[str, str], Any]  # (member name, what it is in a sentence) -> parsed JSON

# ===================================================================== the bundle as read


@dataclass(frozen=True, slots=True)
class Bundle:
    """What a checked bundle holds.  Its chats were each read and checked, then let go: only
    their numbers are kept (an import reads each again as it stores it, one at a time)."""

    cairn_version: str
    created_at: str
    workspaces: tuple[WorkspaceEntry, ...]
    chats: frozenset[int]  # the n of every chats/<n>.json
    attached: frozenset[str]  # the SHA-256 of every attachment the chats name
    blobs: frozenset[str]  # the SHA-256 of every files/ member
    format_version: int = FORMAT_VERSION  # how its chats are written (1: before branches)

    @property
    def attachment_blobs(self) -> set[str]:
        return set(self.attached & self.blobs)


def attachments(content: Any) -> Iterator[str]:
    """The SHA-256 of every attachment block in message content (tool results included)."""
    if isinstance(content, dict):
        if content.get("type") == "attachment" and isinstance(content.get("sha256"), str):
            yield content["sha256"]
        for value in content.values():
            yield from attachments(value)
    elif isinstance(content, list):
        for value in content:
            yield from attachments(value)


def folder_problem(folder: str) -> str | None:
    """Why a folder's relative path cannot be shared (None: it can).  The same rule on every
    system: names a Windows or POSIX machine would both create as one folder, below the
    workspace."""
    if folder == "":
        return None
    if folder.startswith(("/", "\\")):
        return "is an absolute path"
    if DRIVE.match(folder):
        return "names a drive"
    parts = folder.split("/")
    if len(parts) > MAX_DEPTH:
        return f"lies more than {MAX_DEPTH} folders deep"
    for part in parts:
        if part in ("", ".", ".."):
            return "leaves the workspace" if part == ".." else "has an empty name in it"
        if "\\" in part or ":" in part or any(ord(c) < 32 or c == "\x7f" for c in part):
            return "has a name with a character a folder cannot have everywhere"
        if part != part.rstrip(". ") or len(part) > 255:
            return "has a name a folder cannot have everywhere"
    return None


# ----------------------------------------------------------------- fields and their types


_kind = kind_of


class _Fields:
    """Reads one JSON object: its shape checked by its pydantic model (every field known,
    present and of its type: ``app.sharing.manifest_schemas``), then each value's meaning."""

    def __init__(self, value: Any, where: str, what: str, refuse: Refuse, schema: str) -> None:
        from pydantic import ValidationError

        from app.sharing.manifest_schemas import SCHEMAS
        from app.store.block_schemas import said

        self.where = where
        self.what = what
        self.refuse = refuse
        try:
            SCHEMAS[schema].model_validate(value)
        except ValidationError as invalid:
            self.fail(*said(where, value, invalid.errors()[0]))
        self.value: dict[str, Any] = value

    def fail(self, field: str, why: str) -> NoReturn:
        if field:
            self.refuse(f"the field '{shown(field)}' in {self.what} {why}")
        self.refuse(f"{self.what} {why}")

    def _at(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def text(self, name: str, *, nullable: bool = False, stamp: bool = False,
             choices: tuple[str, ...] = ()) -> Any:
        value = self.value[name]
        if value is None and nullable:
            return None
        _utf8(value, lambda: self.fail(self._at(name), "is not UTF-8 text"))
        if stamp and not _STAMP.fullmatch(value):
            self.fail(self._at(name), "is not a time like 2026-11-30T09:00:00.000Z")
        if choices and value not in choices:
            self.fail(self._at(name), f"should be one of {', '.join(choices)}")
        return value

    def number(self, name: str, *, nullable: bool = False, least: int = 0) -> Any:
        value = self.value[name]
        if value is None and nullable:
            return None
        if value < least or value > 2**62:
            self.fail(self._at(name), f"should be a whole number from {least}")
        return value

    def real(self, name: str) -> float | None:
        value = self.value[name]
        if value is None:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            self.fail(self._at(name), f"should be a number from 0, not {_kind(value)}")
        return float(value)

    def items(self, name: str) -> list[Any]:
        value: list[Any] = self.value[name] or []
        return value


def _utf8(value: str, fail: Callable[[], NoReturn]) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
        fail()


def _strings_are_utf8(value: Any, fail: Callable[[], NoReturn]) -> None:
    if isinstance(value, str):
        _utf8(value, fail)
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key, fail)
            _strings_are_utf8(item, fail)
    elif isinstance(value, list):
        for item in value:
            _strings_are_utf8(item, fail)


# ----------------------------------------------------------------- the manifest


def parse_manifest(value: Any, sizes: dict[str, int], read_json: ReadJson, refuse: Refuse
                   ) -> Bundle:
    """The manifest *value* (parsed JSON) checked field by field, with the chats it names
    (read through *read_json*); *sizes*: every member's unpacked size, by name."""
    names = set(sizes)
    if not isinstance(value, dict):
        refuse("its manifest should be a JSON object")
    if "format_version" not in value:
        refuse("its manifest has no format version")
    version = value["format_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        refuse("its manifest's format version is not a version Cairn knows")
    if version > FORMAT_VERSION:
        refuse(f"it was made by a newer version of Cairn (bundle format {version}; this "
               f"version reads up to {FORMAT_VERSION}). Update Cairn to open it")
    top = _Fields(value, "", "its manifest", refuse, "manifest")
    if top.text("format") != FORMAT:
        top.fail("format", f"should be '{FORMAT}'")
    cairn_version = top.text("cairn_version")
    created_at = top.text("created_at", stamp=True)
    entries = top.items("workspaces")
    if not entries:
        top.fail("workspaces", "is empty")
    chat_members = {n for n in names if n.startswith("chats/")}
    blob_members = {n[6:] for n in names if n.startswith("files/")}
    chats: set[int] = set()
    attached: set[str] = set()
    workspaces: list[WorkspaceEntry] = []
    folders: set[str] = set()
    for index, item in enumerate(entries):
        ws = _workspace(item, f"workspaces[{index}]", refuse, chat_members, chats)
        problem = folder_problem(ws.folder)
        if problem:
            refuse(f"the folder '{shown(ws.folder)}' in its manifest {problem}")
        if (index == 0) != (ws.folder == ""):
            refuse("its manifest should list the workspace first (folder \"\") and then "
                   "only its folders")
        if ws.folder.casefold() in folders:
            refuse(f"the folder '{shown(ws.folder)}' appears twice in its manifest")
        folders.add(ws.folder.casefold())
        workspaces.append(ws)
    unnamed = chat_members - {f"chats/{n}.json" for n in chats}
    if unnamed:
        refuse(f"it holds a chat its manifest does not name: '{shown(sorted(unnamed)[0])}'")
    # Each chat read and checked, then let go: one chat in memory at a time.
    for ws in workspaces:
        for number in ws.chats:
            member = f"chats/{number}.json"
            chat = parse_chat(number, read_json(member, f"the chat '{member}'"), refuse,
                              version=version)
            attached.update(sha for m in chat.messages for sha in attachments(m.content))
            del chat
    needed = {f.sha256 for w in workspaces for f in w.files}
    missing = needed - blob_members
    if missing:
        name = next(f.name for w in workspaces for f in w.files if f.sha256 in missing)
        refuse(f"the content of the file '{shown(name)}' is missing")
    stray = blob_members - needed - attached
    if stray:
        refuse(f"it holds a file nothing in it uses: 'files/{sorted(stray)[0]}'")
    for ws in workspaces:
        for f in ws.files:
            if sizes[f"files/{f.sha256}"] != f.size:
                refuse(f"the file '{shown(f.name)}' is not the size its manifest says")
        if ws.knowledge is not None:
            refs = [ws.knowledge.chat, *(v.chat for v in ws.knowledge.history or ())]
            if any(r is not None and r not in chats for r in refs):
                refuse(f"the knowledge of '{shown(ws.title)}' names a chat the bundle does "
                       "not hold")
    return Bundle(cairn_version=cairn_version, created_at=created_at,
                  workspaces=tuple(workspaces), chats=frozenset(chats),
                  attached=frozenset(attached), blobs=frozenset(blob_members),
                  format_version=version)


def _workspace(value: Any, where: str, refuse: Refuse, chat_members: set[str],
               chats: set[int]) -> WorkspaceEntry:
    f = _Fields(value, where, "its manifest", refuse, "workspace")
    kept_as_file = f.value.get("knowledge_file", False)
    title = one_line(f.text("title"))  # NFC, one line, no control or bidi character, capped
    if not title or not visible(title):
        f.fail(f"{where}.title", "should be a visible title")
    description = text_lines(f.text("description"))
    if len(description) > MAX_DESCRIPTION:
        f.fail(f"{where}.description", f"is longer than {MAX_DESCRIPTION:,} characters")
    knowledge = None
    if f.value["knowledge"] is not None:
        knowledge = _knowledge(f.value["knowledge"], f"{where}.knowledge", refuse)
    files = tuple(_file(item, f"{where}.files[{i}]", refuse)
                  for i, item in enumerate(f.items("files")))
    numbers: list[int] = []
    for i, member in enumerate(f.items("chats")):
        match = CHAT_MEMBER.fullmatch(member)
        if match is None:
            f.fail(f"{where}.chats[{i}]", "should name a member like chats/0.json")
        number = int(match.group(1))
        if number in chats or number in numbers:
            refuse(f"its manifest names the chat '{shown(member)}' twice")
        if member not in chat_members:
            refuse(f"its manifest names the member '{shown(member)}', which is missing")
        numbers.append(number)
    chats.update(numbers)
    return WorkspaceEntry(
        folder=f.text("folder"), title=title, description=description,
        instructions=f.text("instructions"),
        build_status=f.text("build_status", choices=BUILD_STATUSES),
        created_at=f.text("created_at", stamp=True), updated_at=f.text("updated_at", stamp=True),
        knowledge=knowledge, files=files, chats=tuple(numbers), knowledge_file=kept_as_file)


def _knowledge(value: Any, where: str, refuse: Refuse) -> KnowledgeEntry:
    f = _Fields(value, where, "its manifest", refuse, "knowledge")
    text = f.text("text")
    if len(text.encode("utf-8")) > MAX_DOCUMENT_BYTES:
        f.fail(f"{where}.text", "is larger than a knowledge document can be (1 MB)")
    version = f.number("version", least=1)
    history = None
    items = f.value["history"]
    if items is not None:
        versions = []
        for i, item in enumerate(items):
            v = _Fields(item, f"{where}.history[{i}]", "its manifest", refuse, "version")
            versions.append(VersionEntry(
                version=v.number("version", least=1), text=v.text("text"),
                source=v.text("source", choices=SOURCES),
                saved_at=v.text("saved_at", stamp=True), chat=v.number("chat", nullable=True)))
            if len(versions[-1].text.encode("utf-8")) > MAX_DOCUMENT_BYTES:
                v.fail(f"{where}.history[{i}].text", "is larger than a knowledge document can be")
        numbers = [v.version for v in versions]
        if numbers != sorted(set(numbers)) or not versions or (
                versions[-1].version, versions[-1].text) != (version, text):
            f.fail(f"{where}.history", "should run oldest first and end with the current text")
        history = tuple(versions)
    return KnowledgeEntry(text=text, version=version, updated_at=f.text("updated_at", stamp=True),
                          source=f.text("source", choices=SOURCES),
                          chat=f.number("chat", nullable=True), history=history)


def _file(value: Any, where: str, refuse: Refuse) -> FileEntry:
    f = _Fields(value, where, "its manifest", refuse, "file")
    raw = f.text("name")
    name = one_line(raw, limit=MAX_NAME)  # one line, no control or bidi character
    if (not visible(name) or name in (".", "..") or len(raw) > MAX_NAME
            or any(c in raw for c in "/\\\0")):
        f.fail(f"{where}.name", "should be a file name (no folders in it)")
    sha = f.text("sha256")
    if not SHA.fullmatch(sha):
        f.fail(f"{where}.sha256", "should be 64 lowercase hexadecimal digits")
    size = f.number("size")
    if size > MAX_FILE_BYTES:
        f.fail(f"{where}.size", "is larger than a knowledge file can be (32 MB)")
    media_type = f.text("media_type")
    if not media_type or len(media_type) > 255:
        f.fail(f"{where}.media_type", "should be a media type")
    return FileEntry(name=name, media_type=media_type, size=size, sha256=sha,
                     description=one_line(f.text("description"), limit=MAX_LINE),
                     created_at=f.text("created_at", stamp=True))


def parse_chat(number: int, value: Any, refuse: Refuse, *,
               version: int = FORMAT_VERSION) -> ChatEntry:
    """The chat ``chats/<number>.json`` (parsed JSON) checked field by field: its messages
    hold only the content Cairn writes (``app.store.messages.checked_content``) and form a
    tree (format 2): each parent a message of the chat listed before it, no cycle, the leaf a
    message of the chat.  Messages with no parent are the versions of the chat's first
    message (the chat itself is the tree's one root).  A chat of format 1 (before branches)
    becomes a tree as the database's migration made one: what a retry or an edit replaced
    (``superseded_by``) becomes the earlier versions."""
    member = f"chats/{number}.json"
    what = f"the chat '{member}'"
    old = version < 2
    f = _Fields(value, "", what, refuse, "chat_v1" if old else "chat")
    title = one_line(f.text("title"))
    if not title or not visible(title):
        f.fail("title", "should be a visible title")
    raw = f.items("messages")
    messages = []
    links: list[int | None] = []
    for i, item in enumerate(raw):
        m = _Fields(item, f"messages[{i}]", what, refuse, "message_v1" if old else "message")
        role = m.text("role", choices=ROLES)
        try:
            content = checked_content(role, m.value["content"])
        except ContentProblem as problem:
            m.fail(f"messages[{i}].{problem.where}", problem.why)
        _strings_are_utf8(content, lambda: m.fail(f"messages[{i}].content", "is not UTF-8 text"))
        name = "superseded_by" if old else "parent"
        link = m.number(name, nullable=True)
        if link is not None and link >= len(raw):  # an orphan: its parent is not there
            m.fail(f"messages[{i}].{name}", "names a message the chat does not hold")
        links.append(link)
        messages.append(MessageEntry(
            role=role, content=content,
            status=m.text("status", choices=STATUSES), error=m.text("error", nullable=True),
            model=m.text("model", nullable=True),
            input_tokens=m.number("input_tokens", nullable=True),
            cache_write_tokens=m.number("cache_write_tokens", nullable=True),
            cache_read_tokens=m.number("cache_read_tokens", nullable=True),
            output_tokens=m.number("output_tokens", nullable=True), cost_usd=m.real("cost_usd"),
            created_at=m.text("created_at", stamp=True), parent=None if old else link))
    leaf: int | None
    if old:
        parents, leaf = _tree_of_format_1(links)
        messages = [replace(m, parent=p) for m, p in zip(messages, parents)]
    else:
        leaf = f.number("leaf", nullable=True)
        if leaf is not None and leaf >= len(messages):
            f.fail("leaf", "names a message the chat does not hold")
        if leaf is None and messages:
            f.fail("leaf", "should name the message the chat shows last")
        _check_tree(links, f)
    watermark = f.number("watermark", nullable=True)
    if watermark is not None and watermark >= len(messages):
        f.fail("watermark", "names a message the chat does not hold")
    return ChatEntry(number=number, title=title, created_at=f.text("created_at", stamp=True),
                     updated_at=f.text("updated_at", stamp=True), watermark=watermark,
                     messages=tuple(messages), leaf=leaf)


def _check_tree(parents: list[int | None], f: _Fields) -> None:
    """Each parent listed before its message, and no cycle: said in one sentence."""
    for i, parent in enumerate(parents):
        if parent is None or parent < i:
            continue
        # Up from i: back at i is a cycle; otherwise a parent listed after its message.
        seen = {i}
        at: int | None = parent
        while at is not None and at not in seen:
            seen.add(at)
            at = parents[at]
        if at == i:
            f.fail(f"messages[{i}].parent", "makes a cycle: the message would be its own "
                                            "ancestor")
        f.fail(f"messages[{i}].parent", "names a message listed after it (a parent comes "
                                        "before its replies)")


def _tree_of_format_1(superseded: list[int | None]) -> tuple[list[int | None], int | None]:
    """The tree a format-1 chat stands for (the migration's rule, by place): a message's
    parent is the newest earlier message still in the conversation when it was written (a
    message taken out by a retry or an edit stays in until the next message after the last
    of those taken out with it); the leaf is the conversation's last message."""
    last_of: dict[int, int] = {}
    for i, by in enumerate(superseded):
        if by is not None:
            last_of[by] = i
    parents: list[int | None] = []
    for i in range(len(superseded)):
        parent = None
        for x in range(i - 1, -1, -1):
            by = superseded[x]
            if by is None or last_of[by] >= i:
                parent = x
                break
        parents.append(parent)
    shown = [i for i, by in enumerate(superseded) if by is None]
    return parents, (shown[-1] if shown else None)
