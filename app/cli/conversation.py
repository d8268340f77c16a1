"""Command-line subcommands about conversations: ask, context, files, memory, knowledge.

Kept apart from the registry's commands so that ``cairn workspace list`` never imports the
chat engine (nor, through it, the Anthropic SDK).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.base.paths import shown
from app.cli import stdin
from app.cli.output import Commands, Emit, JsonFlag, text_of
from app.commands import CONVERSATION as COMMANDS  # noqa: E402, F401 - the names, in one place
from app.errors import Refused, os_reason
from app.llm.prices import usage_line

if TYPE_CHECKING:
    from app.cairn import Cairn
    from app.chat.turn import RetryWaiting, TurnResult
    from app.knowledge.rebuild import Report
    from app.records import Chat


# How each knowledge action reads in "cannot … workspace 'ws_x': no such workspace".
_KNOWLEDGE_VERBS = {
    "show": "show the knowledge of",
    "set": "replace the knowledge of",
    "history": "show the knowledge history of",
    "diff": "compare knowledge versions of",
    "restore": "restore the knowledge of",
    "status": "show the knowledge status of",
    "suggestions": "show the knowledge suggestions of",
    "accept": "accept a knowledge suggestion of",
    "dismiss": "dismiss a knowledge suggestion of",
}


def whole_number(text: str) -> int:
    """A count or a version typed on the command line: plain digits (not ², not ٣), < 10⁹."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"'{shown(text[:40])}' is not a whole number (0, 1, "
                                         "2, …)")
    digits = text.lstrip("0") or "0"
    if len(digits) > 9:
        raise argparse.ArgumentTypeError(f"'{shown(text[:40])}' is too large")
    return int(digits)


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    p = json_flag(commands.add_parser("ask", help="send a message and stream Claude's reply"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--folder", metavar="PATH", help="start a chat in this folder")
    where.add_argument("--chat", metavar="ID", help="continue this chat")
    p.add_argument("--attach", metavar="FILE", action="append", default=[], type=Path,
                   help="send a file with the message (text, PDF, image); repeatable")
    p.add_argument("--web", action="store_true", default=None,
                   help="let Claude search and read the web for this message "
                        "($10 per 1,000 searches)")
    p.add_argument("--allow-tool", metavar="SERVER.TOOL", action="append", default=[],
                   help="let Claude call this MCP server's tool for this message without "
                        "asking (repeatable); other calls are asked for on a terminal, and "
                        "declined without one")
    p.add_argument("message", metavar="MESSAGE", nargs="?",
                   help="what to send; `-`, or nothing with a pipe, reads standard input")
    _add_script_options(p, where)

    p = json_flag(commands.add_parser("context", help="print the system prompt of the next turn"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--folder", metavar="PATH")
    where.add_argument("--chat", metavar="ID")

    files = commands.add_parser("files", help="a workspace's knowledge files")
    actions = files.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(actions.add_parser("add", help="upload a file into a workspace"))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", type=Path)
    p.add_argument("--description", metavar="T", default="")
    p = json_flag(actions.add_parser("list", help="the files a chat in this workspace sees"))
    p.add_argument("id", metavar="ID")

    memory = commands.add_parser("memory", help="personal memory and its switch")
    actions = memory.add_subparsers(dest="action", metavar="ACTION", required=True)
    json_flag(actions.add_parser("show", help="print personal memory"))
    p = json_flag(actions.add_parser("set", help="replace personal memory with a file's text "
                                                 "(`-`: standard input)"))
    p.add_argument("file", metavar="FILE", type=Path)
    json_flag(actions.add_parser("on", help="send personal memory to the model"))
    json_flag(actions.add_parser("off", help="stop sending personal memory"))

    knowledge = commands.add_parser("knowledge", help="a workspace's knowledge document")
    actions = knowledge.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(actions.add_parser("show", help="print the document"))
    p.add_argument("id", metavar="ID")
    p = json_flag(actions.add_parser("set", help="replace the document with a file's text "
                                                 "(`-`: standard input)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", type=Path)
    p = json_flag(actions.add_parser("history", help="saved versions, newest first"))
    p.add_argument("id", metavar="ID")
    p = json_flag(actions.add_parser("diff", help="what changed between two versions"))
    p.add_argument("id", metavar="ID")
    p.add_argument("old", metavar="OLD", type=whole_number)
    p.add_argument("new", metavar="NEW", type=whole_number)
    p = json_flag(actions.add_parser("restore", help="make an old version the current one"))
    p.add_argument("id", metavar="ID")
    p.add_argument("version", metavar="VERSION", type=whole_number)
    p = json_flag(actions.add_parser("status", help="the last rebuild: success, failure, "
                                                    "what it could not apply, what waits"))
    p.add_argument("id", metavar="ID")
    p = json_flag(actions.add_parser("rebuild", help="run a chat's pending rebuild now"))
    p.add_argument("id", metavar="CHAT")
    p = json_flag(actions.add_parser("suggestions", help="changes the knowledge model proposed "
                                                         "that wait for you to decide"))
    p.add_argument("id", metavar="ID")
    p = json_flag(actions.add_parser("accept", help="apply suggestion N to the document"))
    p.add_argument("id", metavar="ID")
    p.add_argument("number", metavar="N", type=whole_number)
    p.add_argument("--text", metavar="T", help="your own wording of the entry, instead of the "
                                                "suggested one")
    p = json_flag(actions.add_parser("dismiss", help="drop suggestion N, the document unchanged"))
    p.add_argument("id", metavar="ID")
    p.add_argument("number", metavar="N", type=whole_number)


def _add_script_options(p: argparse.ArgumentParser,
                        where: argparse._MutuallyExclusiveGroup) -> None:
    """`cairn ask`'s options for scripts: go on with the last chat here, stream JSON lines."""
    where.add_argument("-c", "--continue", dest="resume", action="store_true",
                       help="continue the last chat started in the current folder")
    p.add_argument("--jsonl", action="store_true",
                   help="stream one JSON object per line for each event; the last one is what "
                        "--json prints")


def last_chat_here(cairn: Cairn, folder: str) -> Chat:
    """The chat of *folder* written to last (archived ones left out, as the sidebar hides
    them); compared as real paths, so a symlinked or relative way in finds the same chats."""
    here = os.path.realpath(folder)
    listing = cairn.registry.chat_listing()
    chats = [c for _, chats in listing.workspaces for c in chats] + listing.ungrouped
    mine = [c for c in chats if c.folder and os.path.realpath(c.folder) == here]
    if not mine:
        raise Refused(f"cannot continue the last chat of '{shown(here)}': no chat was started "
                      "in this folder (start one with `cairn ask --folder . MESSAGE`)")
    return max(mine, key=lambda c: (c.updated_at, c.created_at))


class JsonLines:
    """`cairn ask --jsonl`: each event as one JSON object on its own line, flushed at once."""

    def __init__(self, stdout: TextIO) -> None:
        self.stdout = stdout

    def __call__(self, kind: str, **fields: Any) -> None:
        self.stdout.write(json.dumps({"type": kind, **fields}, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def final(self, summary: dict[str, Any]) -> None:
        self.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
        self.stdout.flush()


def add_setting_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    from app.store.settings import SETTINGS

    names = _Names(SETTINGS)  # completed by the shell; an unknown one is refused in a sentence
    settings = commands.add_parser("settings", help="models, base URL, idle delay")
    actions = settings.add_subparsers(dest="action", metavar="ACTION", required=True)
    json_flag(actions.add_parser("show", help="every setting and its value"))
    json_flag(actions.add_parser("list", help="every setting: its value, default, choices "
                                              "and what it does"))
    p = json_flag(actions.add_parser("get", help="one setting's value"))
    p.add_argument("name", metavar="NAME", choices=names, help=", ".join(SETTINGS))
    p = json_flag(actions.add_parser("set", help="change one setting"))
    p.add_argument("name", metavar="NAME", choices=names, help=", ".join(SETTINGS))
    p.add_argument("value", metavar="VALUE")
    json_flag(commands.add_parser("models", help="the models the server offers, and the ones "
                                                 "Cairn uses"))
    key = commands.add_parser("key", help="the API key of the server in use (Anthropic's, or "
                                          "the base URL's), kept in the system keychain")
    actions = key.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("set", help="store a key (read from standard input, never an argument)")
    actions.add_parser("forget", help="remove the stored key")
    actions.add_parser("status", help="say whether a key is set, and where it comes from")


def run(cairn: Cairn, args: argparse.Namespace, emit: Emit,
        stdout: TextIO, stderr: TextIO) -> int:
    command = args.command
    if command == "ask":
        return _ask(cairn, args, stdout, stderr)
    if command == "settings":
        return _settings(cairn, args, emit, stderr)
    if command == "key":
        return _key(cairn, args, stdout)
    if command == "models":
        return _models(cairn, emit, stderr)
    if command == "context":
        chat = _chat_for(cairn, args, create=False)
        blocks = cairn.engine.system(chat, "")
        emit(blocks, lambda: "\n\n".join(b["text"] for b in blocks))
        return 0
    if command == "files":
        from app.store.files import scope

        ws = cairn.registry.get_workspace(args.id, verb="use the files of")
        chain = [layer.id for layer in cairn.registry.lineage(ws.id)]  # the project first
        if args.action == "add":
            record = cairn.files.add(ws.id, args.file, description=args.description)
            emit(record.to_json(scope=scope(ws.id, chain)),
                 lambda: f"Added {record.id}  {shown(record.name)}")
            if not cairn.files.readable(record):
                stderr.write(f"The model sees '{shown(record.name)}' listed by name, size and "
                             "description but cannot read it: it reads text, PDFs (up to 32 MB) "
                             "and images (PNG, JPEG, GIF, WebP, up to 5 MB).\n")
            return 0
        listed = [f.to_json(scope=where) for f, where in cairn.files.manifest(chain)]
        emit(listed, lambda: "\n".join(
            f"{f['id']}  {shown(f['name'])}  ({f['scope']})  {shown(f['description'])}".rstrip()
            for f in listed) or "No knowledge files.")
        return 0
    if command == "memory":
        from app.store.documents import PERSONAL

        return _document(cairn, PERSONAL, args, emit, label="Personal memory", stderr=stderr)
    if command == "knowledge":
        if args.action == "rebuild":
            chat = cairn.registry.get_chat(args.id, verb="rebuild the knowledge of")
            report = asyncio.run(cairn.rebuilder.rebuild(chat.id))
            emit(_rebuild_json(report), lambda: "")
            if not getattr(args, "json", False):
                _report_rebuild(report, stderr)
                if report.status == "nothing" and not report.refused:
                    stdout.write("Nothing new to record.\n")
            return 1 if report.error else 0
        from app.store.documents import PERSONAL

        if args.id == PERSONAL:
            owner, label = PERSONAL, "Personal memory"
        else:
            ws = cairn.registry.get_workspace(args.id, verb=_KNOWLEDGE_VERBS[args.action])
            owner, label = ws.id, f"Knowledge of {shown(ws.title)}"
        if args.action == "status":
            status = _knowledge_status(cairn, owner)
            emit({"owner": owner, **status}, lambda: _status_text(label, status))
            return 0
        if args.action in ("suggestions", "accept", "dismiss"):
            return _suggestions(cairn, owner, args, emit, label=label)
        if args.action == "history":
            versions = [v.to_json() for v in cairn.knowledge.history(owner)]
            emit(versions, lambda: "\n".join(
                f"{v['version']:>4}  {v['saved_at']}  {v['source']:<8} {v['size']:>7,} chars"
                + (f"  {v['chat']}" if v["chat"] else "") for v in versions) or "No versions yet.")
            return 0
        if args.action == "diff":
            patch = cairn.knowledge.diff(owner, args.old, args.new)
            emit({"diff": patch}, lambda: patch.rstrip("\n") or "No difference.")
            return 0
        if args.action == "restore":
            doc = cairn.knowledge.restore(owner, args.version)
            emit({"owner": owner, "version": doc.version, "text": doc.text},
                 lambda: f"{label}: version {args.version} restored as version {doc.version}.")
            return 0
        return _document(cairn, owner, args, emit, label=label, stderr=stderr)
    raise AssertionError(command)


def _document(cairn: Cairn, owner: str, args: argparse.Namespace,
              emit: Emit, *, label: str, stderr: TextIO | None = None) -> int:
    if args.action in ("on", "off"):
        cairn.settings.set("memory.enabled", args.action == "on")
        emit({"memory": args.action}, lambda: f"Personal memory is {args.action}.")
        return 0
    if args.action == "set":
        text = _read_document(args.file, owner)
        doc = cairn.knowledge.save(owner, text, source="user").document  # lands on top
    else:
        doc = cairn.knowledge.get(owner)
    data = {"owner": owner, "text": doc.text, "version": doc.version,
            "updated_at": doc.updated_at, "source": doc.source,
            "rebuild": _knowledge_status(cairn, owner)}
    if owner == "personal":
        data["enabled"] = cairn.settings.get("memory.enabled")
    else:  # the read above took in an outside edit of CAIRN.md, or says why it could not
        kept = cairn.cairn_file_sync.state(owner)
        data["knowledge_file"] = kept.to_json()
        if kept.sentence and stderr is not None and not getattr(args, "json", False):
            stderr.write(shown(kept.sentence) + "\n")
    emit(data, lambda: doc.text if args.action == "show" else f"{label} saved (version {doc.version}).")
    if args.action == "show" and not doc.text.strip() and stderr is not None \
            and not getattr(args, "json", False):
        stderr.write(f"{label} is empty.\n")  # (a person sees it; a script's stdout stays empty)
    return 0


def _suggestions(cairn: Cairn, owner: str, args: argparse.Namespace, emit: Emit, *,
                 label: str) -> int:
    """``knowledge suggestions|accept|dismiss``: the same use cases as the panel's strip."""
    from app.knowledge import suggestions

    if args.action == "suggestions":
        waiting = [s.to_json() for s in suggestions.waiting(cairn.knowledge, [owner])]
        emit(waiting, lambda: "\n\n".join(suggestion_text(s) for s in waiting)
             or f"{label}: no suggestions wait for you.")
        return 0
    found = cairn.knowledge.suggestion(args.number)
    if found.owner != owner:
        raise Refused(f"cannot {args.action} suggestion {args.number}: it is not a suggestion "
                      f"for this document (`cairn knowledge suggestions` lists them)")
    if args.action == "dismiss":
        suggestions.dismiss(cairn.knowledge, args.number)
        emit({"owner": owner, "dismissed": args.number},
             lambda: f"Suggestion {args.number} dismissed; the document is unchanged.")
        return 0
    doc = suggestions.accept(cairn.knowledge, args.number, edited=args.text)
    emit({"owner": owner, "accepted": args.number, "version": doc.version, "text": doc.text},
         lambda: f"Suggestion {args.number} accepted: {label} is now version {doc.version}.")
    return 0


def suggestion_text(s: dict[str, Any]) -> str:
    """One suggestion as the command line lists it (the model wrote it: shown() escapes)."""
    what = {"add": f"Add to {s['section'] or 'Facts'}",
            "update": "Change", "merge": f"Merge {len(s['targets'])} entries into"}[s["kind"]]
    places = s.get("places") or []
    if s["kind"] == "update" and places and s["section"] \
            and places[0].get("section") != s["section"]:
        what = f"Move to {s['section']} and change"  # an answered question becoming a decision
    lines = [f"#{s['id']}  {what}:"]
    lines += [f"    - {shown(t)}" for t in s["targets"]]
    if s["targets"]:
        lines.append("  into:")
    lines.append(f"    + {shown(s['text'])}")
    lines += [f"  and removes from {shown(r.get('section') or 'the document')}: "
              f"{shown(str(r.get('text', '')).splitlines()[0] if r.get('text') else '')}"
              for r in s.get("removes") or []]
    lines.append(f"  Not applied by itself: {shown(s['reason'])}")
    if s["evidence"]:
        who = {"person": "you", "claude": "Claude"}.get(s["said_by"] or "",
                                                      "not found in the chat's messages")
        lines.append(f"  Evidence ({who}): \"{shown(s['evidence'])}\"")
    return "\n".join(lines)


def _knowledge_status(cairn: Cairn, owner: str) -> dict[str, Any]:
    """The document's state, as the window's knowledge panel reads it."""
    from app.knowledge.status import owner_knowledge

    return owner_knowledge(cairn.registry, cairn.rebuilder, owner).to_json()


def _read_document(path: Path, owner: str) -> str:
    """The text of a document file: a regular file of UTF-8 text, at most 1 MB.

    Never more than the cap is read, so ``/dev/zero`` or a 2 GB file cost nothing, and a
    FIFO is refused without waiting for a writer.
    """
    from app.store.documents import MAX_DOCUMENT_BYTES, check_size
    from app.store.files import open_source

    if str(path) == stdin.STDIN:
        data = stdin.read(MAX_DOCUMENT_BYTES, what="the document")
        check_size(owner, len(data))
        return stdin.text(data, what="the document")
    reader, size = open_source(path, verb="read")
    with reader:
        check_size(owner, size)
        try:
            data = reader.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as error:
            raise Refused(f"cannot read '{shown(str(path))}': {os_reason(error)}") from None
    check_size(owner, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(f"cannot read '{shown(str(path))}': it is not UTF-8 text (byte "
                      f"{error.start + 1:,} is not part of any character); save it as UTF-8 "
                      "and try again") from None


def _probe_chat(ws_id: str | None) -> Chat:
    """A chat header that is not stored: what a new chat in *ws_id* would be."""
    from app.records import Chat

    return Chat("ch_unsaved", "", None, ws_id, "", "")


def _chat_for(cairn: Cairn, args: argparse.Namespace, *, create: bool) -> Chat:
    if args.chat is not None:  # even "": an empty id is no chat, not "no --chat"
        verb = "continue" if create else "show the context of"
        return cairn.registry.get_chat(args.chat, verb=verb)
    folder = os.path.abspath(args.folder)  # typed in a shell: relative to here
    if create:
        return cairn.registry.new_chat(folder=folder)
    home = cairn.registry.workspace_for_folder(folder)
    return _probe_chat(home.id if home else None)


def _message(args: argparse.Namespace) -> str:
    """The text to send: the argument, or standard input for `-` or for a pipe with none."""
    if args.message == stdin.STDIN or (args.message is None and stdin.piped()):
        return stdin.message()
    if args.message is None:
        raise Refused("cannot send an empty message: give MESSAGE, or `-` to read it from "
                      "standard input")
    return str(args.message)


def _ask(cairn: Cairn, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from app.chat.web import sources, web_line

    lines = JsonLines(stdout) if args.jsonl else None
    as_json = getattr(args, "json", False) or lines is not None  # (nothing else on stdout)
    args.message = _message(args)  # read once, before anything is stored
    if args.resume:
        args.chat = last_chat_here(cairn, os.getcwd()).id
    closed = [False]  # stdout went away (`cairn ask … | head`): the turn goes on regardless

    def stream(text: str) -> None:
        if closed[0]:
            return
        if lines is not None:
            lines("text", text=text)
            return
        if as_json:
            return
        try:
            # Escaped: a reply's escape sequences (a clipboard write, a screen clear, a bidi
            # override) would otherwise act on the terminal.
            stdout.write(text_of(text))
            stdout.flush()
        except (BrokenPipeError, ValueError, OSError):
            closed[0] = True
            _silence(stdout)

    def waiting(event: RetryWaiting) -> None:
        if lines is not None:
            lines("waiting", message=event.sentence())
        stderr.write(f"{event.sentence()} (Ctrl+C stops.)\n")
        stderr.flush()

    async def turn_then_rebuild() -> tuple[Chat, str | None, TurnResult, Report]:
        # One event loop for the whole command: the client's connections belong to it.
        # A retired model, an empty message or a file that cannot be sent is refused before
        # anything is stored, the new chat included.
        notice = await cairn.engine.models_ready(cairn.settings.get("model.chat"), "chat")
        if args.chat is None:
            if not args.message.strip() and not args.attach:
                raise Refused("cannot send an empty message")
            for path in args.attach:  # the same checks the turn makes; blobs are shared
                await cairn.storage.run(cairn.files.attach, Path(path))
        chat = _chat_for(cairn, args, create=True)
        _stop_on_sigterm()
        from app.cli.mcp import approver

        result = await cairn.engine.send(chat.id, args.message, attachments=args.attach,
                                         web=args.web, approver=approver(args.allow_tool),
                                         on_text=stream, on_wait=waiting)
        if lines is not None:  # the reply is whole and stored; the rebuild may take a while
            lines("reply", chat=chat.id, status=result.status, error=result.error)
        # A command line has no idle time to wait for: the rebuild runs before exiting.
        return chat, notice, result, await _rebuild_or_leave(cairn, chat.id, stderr, lines)

    _TERMINATED.clear()
    try:
        chat, notice, result, rebuilt = asyncio.run(turn_then_rebuild())
    except (KeyboardInterrupt, asyncio.CancelledError) as stopped:
        # Ctrl-C or SIGTERM: the turn kept what had arrived, marked stopped.
        stderr.write("\nStopped; the partial reply is kept.\n")
        return 130 if isinstance(stopped, KeyboardInterrupt) else 143
    finally:
        cairn.stop_mcp_servers()  # none of them outlives the command
    if closed[0]:
        stdout = io.StringIO()  # nothing more goes to a closed pipe
    replied = [m for m in cairn.chats.messages(chat.id, after=min(result.message_ids) - 1)
               if m.id in result.message_ids] if result.message_ids else []
    found = sources(replied)
    if not as_json:
        if result.text and not result.text.endswith("\n"):
            stdout.write("\n")
        for line in filter(None, (web_line(b) for m in replied for b in m.content
                                  if b.get("type") != "server_tool_use")):
            stdout.write(text_of(line) + "\n")  # a failed search or page, in one sentence
        if found:  # after the reply, so that stdout still reads as the answer first
            stdout.write("\nSources:\n" + "".join(
                f"  {n}. {text_of(s.title)} — {text_of(s.url)}\n"
                for n, s in enumerate(found, 1)))
    notices = [n for n in (notice, result.notice, rebuilt.notice, *result.tool_notices) if n]
    if not as_json:
        for line in notices:
            stderr.write(text_of(line) + "\n")
        for call in result.tool_calls:  # a call declined for want of a terminal: how to allow it
            if call.get("outcome") == "declined" and "server" in call:
                stderr.write(text_of(f"Declined {call['server']}.{call['tool']}; allow it for "
                                     f"one message with --allow-tool {call['server']}."
                                     f"{call['tool']}") + "\n")
    if not as_json and not result.error:
        # On stderr, so that stdout holds the reply alone (cairn ask … > answer.md).
        stderr.write(f"{usage_line(result.usage, result.cost_usd)} · {chat.id}\n")
    summary = {"chat": chat.id, "status": result.status, "error": result.error,
               "model": result.model, "usage": result.usage.to_json(),
               "cost_usd": result.cost_usd, "text": result.text,
               "sources": [s.to_json() for s in found],
               "web_searches": result.usage.web_searches,
               "tool_calls": [dict(c) for c in result.tool_calls],
               "notices": notices,
               "knowledge": _rebuild_json(rebuilt)}
    if lines is not None:
        lines.final(summary)
    elif as_json:
        stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    if not as_json:
        _report_rebuild(rebuilt, stderr)
    if result.error:
        stderr.write(text_of(result.error) + "\n")
        return 1
    if result.status == "stopped":
        stderr.write("Stopped; the partial reply is kept.\n")
        return 1
    if rebuilt.status == LEFT_FOR_LATER:
        return 143 if _TERMINATED else 130
    return 0


LEFT_FOR_LATER = "left for later"  # a rebuild's report when Ctrl+C left it (cairn ask)
_TERMINATED: list[bool] = []  # SIGTERM came (cairn ask): set by its handler


async def _rebuild_or_leave(cairn: Cairn, chat_id: str, stderr: TextIO,
                            lines: JsonLines | None) -> Report:
    """The rebuild after a reply, saying on stderr what it waits for (a 429's wait); Ctrl+C
    (or SIGTERM) leaves it for later: the reply is stored, and the exchange stays pending for
    the next rebuild (the next turn's, or `cairn knowledge rebuild`)."""
    from app.knowledge import rebuild
    from app.llm.client import seconds, server_named

    who = server_named(cairn.settings.base_url())

    def waiting(wait: float, why: str) -> None:  # (on the network thread)
        again = f"trying again in {seconds(round(wait))}"
        what = {"rate-limited": f"{who} asked to wait {seconds(round(wait))}",
                "overloaded": f"{who} is overloaded; {again}",
                "server": f"{who} had a problem answering; {again}",
                }.get(why, f"{who} could not be reached; {again}")
        sentence = (f"Updating knowledge: {what} (Ctrl+C leaves it for later; your reply is "
                    "saved).")
        if lines is not None:
            lines("knowledge waiting", message=sentence)
        stderr.write(sentence + "\n")
        stderr.flush()

    token = rebuild.retry_listener.set(waiting)
    try:
        return await cairn.rebuilder.rebuild(chat_id)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # only the rebuild is left: the reply is whole, and is reported
        return rebuild.Report(chat_id, status=LEFT_FOR_LATER)
    finally:
        rebuild.retry_listener.reset(token)


def _silence(stream: TextIO) -> None:
    """Point a closed stdout at the null device, so that Python's own flush at exit does not
    complain about the broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _stop_on_sigterm() -> None:
    """SIGTERM stops the turn like Ctrl-C does (the partial reply is kept, marked stopped)."""
    import signal

    task = asyncio.current_task()
    if task is None or not hasattr(signal, "SIGTERM"):
        return
    try:
        def terminate() -> None:
            _TERMINATED.append(True)  # (the exit status says which signal: 143, not 130)
            task.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        pass


def _models(cairn: Cairn, emit: Emit, stderr: TextIO) -> int:
    """The models list, fetched now, with lifecycle, limits, price and what Cairn uses."""
    from app.llm.client import ModelError
    from app.llm.prices import pricing

    why: list[str] = []  # no key, no such server…: said in the one sentence below

    async def fetch() -> bool:
        try:
            client = cairn.engine.client()
        except ModelError as error:
            why.append(str(error).rstrip("."))
            return False
        return bool(await cairn.catalog.refresh(client, cairn.engine.server()))

    fresh = asyncio.run(fetch())
    catalog = cairn.catalog
    uses: dict[str, list[str]] = {}
    for purpose in ("chat", "knowledge"):
        uses.setdefault(cairn.settings.get(f"model.{purpose}"), []).append(purpose)
    rows: list[dict[str, Any]] = []
    listed = catalog.models()
    for model_id in uses:  # a configured model the server does not list is shown too
        if catalog.info(model_id) is None:
            rows.append({"id": model_id, "display_name": model_id, "lifecycle": "unknown"})
    for info in listed:
        rows.append(info.to_json())
    for row in rows:
        row["used_for"] = uses.get(row["id"], [])
        successor = catalog.successor(row["id"]) if row["lifecycle"] != "active" else None
        row["successor"] = successor.id if successor else None
        found = pricing(row["id"])
        row["price_per_mtok"] = (None if found is None else
                                 {"input": found.base.input, "cache_write": found.base.cache_write,
                                  "cache_read": found.base.cache_read,
                                  "output": found.base.output})

    def text() -> str:
        lines = []
        for row in rows:
            state = row["lifecycle"]
            if row.get("retires_at") and state != "active":
                state += f" {'on' if state == 'retired' else 'from'} {row['retires_at'][:10]}"
            if row["successor"]:
                state += f", use {row['successor']}"
            price = row["price_per_mtok"]
            cost = (f"${price['input']:.2f} in / ${price['output']:.2f} out per Mtok" if price
                    else "price unknown")
            context = (f"{row['max_input_tokens']:,} tokens" if row.get("max_input_tokens")
                       else "")
            used = f"  ← {' and '.join(row['used_for'])}" if row["used_for"] else ""
            lines.append(f"{shown(row['id']):<22} {shown(row['display_name']):<20} {state:<46} "
                         f"{context:>17}  {cost}{used}".rstrip())
        return "\n".join(lines) or "The server lists no models."

    emit(rows, text)
    if not fresh:
        when = catalog.fetched_at
        stderr.write("Could not fetch the models list now"
                     + (f" ({why[0]})" if why else "") + "; "
                     + (f"this is the list fetched at {when[:16].replace('T', ' ')} UTC.\n"
                        if when else "no list was ever fetched.\n"))
        return 1  # a script must not take an old (or empty) list for the server's answer
    return 0


def _rebuild_json(report: Report) -> dict[str, Any]:
    return {"status": report.status, "applied": report.applied,
            "refused": [{"op": r.op, "reason": r.reason} for r in report.refused],
            "unapplied": report.unapplied, "suggested": report.suggested,
            "error": report.error}


def _status_text(label: str, status: dict[str, Any]) -> str:
    last = status["last_success"]
    lines = [f"{label}: last rebuild {last}." if last else f"{label}: no rebuild yet."]
    if status["last_error"]:
        lines.append(f"Last failure: {shown(status['last_error'])}")
    if status["unapplied"]:  # the knowledge model wrote the reasons' quotes: shown() them
        lines.append(shown(status["unapplied"]))
    waiting = status["pending_exchanges"]
    lines.append(f"{waiting} exchange{'s' if waiting != 1 else ''} waiting for a rebuild.")
    found = status["suggestions"]
    if found:
        lines.append(f"{len(found)} suggestion{'s' if len(found) != 1 else ''} wait for you "
                     "(accept with `cairn knowledge accept ID N`, or dismiss):")
        lines += [suggestion_text(s) for s in found]
    return "\n".join(lines)


def _report_rebuild(report: Report, stderr: TextIO) -> None:
    if report.status == "nothing" and not report.refused:
        return
    if report.status == LEFT_FOR_LATER:
        stderr.write(f"\nKnowledge update left for later: your reply is saved, and the next "
                     f"turn in this chat (or `cairn knowledge rebuild {report.chat_id}`) "
                     "learns from it.\n")
        return
    if report.error:
        stderr.write(f"Knowledge not updated: {report.error}\n")
        return
    stderr.write(f"Knowledge: {len(report.applied)} change{'s' if len(report.applied) != 1 else ''}"
                 f" applied, {len(report.refused)} refused.\n")
    # The knowledge model wrote these: an escape sequence in them must not drive the terminal.
    for op in report.applied:
        where = op.get('ref') or op.get('refs') or op.get('target')
        stderr.write(f"  + {shown(str(op.get('op')))} {shown(str(where))}:"
                     f" {shown(str(op.get('text', '')))}\n")
    for refusal in report.refused:
        stderr.write(f"  - refused: {shown(str(refusal.reason))}\n")
    if report.unapplied:
        stderr.write(f"  {shown(report.unapplied)}\n")
    if report.suggested:
        stderr.write(f"  {report.suggested} suggestion{'s' if report.suggested != 1 else ''} "
                     "kept for you to decide: `cairn knowledge suggestions ID` lists them.\n")


class _Names(tuple[str, ...]):
    """The settings' names as a positional's choices: listed for completion, but any name
    passes argparse, so an unknown one gets the store's own sentence, not argparse's."""

    def __contains__(self, _name: object) -> bool:
        return True


def _settings(cairn: Cairn, args: argparse.Namespace,
              emit: Emit, stderr: TextIO) -> int:
    from app.store.settings import SETTINGS

    if args.action in ("set", "get") and args.name not in SETTINGS:
        verb = "change" if args.action == "set" else "read"
        raise Refused(f"cannot {verb} setting '{shown(args.name[:80])}': there is no such "
                      f"setting (there are {', '.join(SETTINGS)})")
    if args.action == "set":
        label = SETTINGS[args.name].label
        kind = type(SETTINGS[args.name].default)
        raw = args.value.strip()
        value: Any = raw
        if kind is bool:
            choices = {"on": True, "true": True, "yes": True, "1": True,
                       "off": False, "false": False, "no": False, "0": False}
            if raw.lower() not in choices:
                raise Refused(f"cannot change setting '{label}': say on or off, not "
                              f"'{shown(raw[:80])}'")
            value = choices[raw.lower()]
        elif kind is int:
            # isdigit() alone takes "²" and "٣", which int() refuses or reads as another number.
            # A number below 0 is read, and refused by the setting's own range, which says it.
            sign, number = (-1, raw[1:]) if raw.startswith("-") else (1, raw)
            if not (number.isascii() and number.isdigit()):
                raise Refused(f"cannot change setting '{label}': '{shown(raw[:80])}' is not "
                              "a whole number")
            digits = number.lstrip("0") or "0"
            value = sign * (int(digits) if len(digits) <= 12 else 10**12)  # (out of range)
        cairn.settings.set(args.name, value)
    if args.action == "get":
        one = cairn.settings.get(args.name)
        emit({args.name: one}, lambda: json.dumps(one))
        return 0
    values = {name: cairn.settings.get(name) for name in SETTINGS}
    if args.action == "list":
        rows = [{"name": s.key, "label": s.label, "value": values[s.key], "default": s.default,
                 "about": s.about, **({"choices": list(s.values())} if s.choices else {}),
                 **({"range": list(s.range)} if s.range else {})}
                for s in SETTINGS.values()]

        def said() -> str:
            lines = []
            for row in rows:
                extra = (f" One of: {', '.join(json.dumps(c) for c in row['choices'])}."
                         if "choices" in row else
                         f" From {row['range'][0]:,} to {row['range'][1]:,}." if "range" in row
                         else "")
                lines.append(f"{row['name']} = {json.dumps(row['value'])}  ({row['label']}; "
                             f"default {json.dumps(row['default'])})\n    {row['about']}{extra}")
            return "\n".join(lines)

        emit(rows, said)
    else:
        emit(values, lambda: "\n".join(f"{name} = {json.dumps(value)}"
                                       for name, value in values.items()))
    _warn_of_plain_http(cairn, stderr)
    return 0


def _warn_of_plain_http(cairn: Cairn, stderr: TextIO) -> None:
    """Every `cairn settings` says so when the base URL (the setting or ANTHROPIC_BASE_URL)
    is plain http to another machine, and whether the key is sent there."""
    from app.store.settings import origin, plain_http_host, plain_http_warning

    url = cairn.settings.base_url()
    if not url or plain_http_host(url) is None:
        return
    if cairn.settings.plain_http_refusal(url) is None:
        stderr.write(f"Warning: {shown(plain_http_warning(url))} You allowed it "
                     "(api.plain_http); `cairn settings set api.plain_http ''` withdraws it.\n")
    else:
        stderr.write(f"Warning: {shown(plain_http_warning(url))} Cairn will not send your "
                     "API key there until you allow it: `cairn settings set api.plain_http "
                     f"{shown(origin(url))}`.\n")


def _key(cairn: Cairn, args: argparse.Namespace, stdout: TextIO) -> int:
    import getpass

    if args.action == "set":
        # Never an argument: shell history and process lists would keep it.
        try:
            owner = cairn.settings.key_owner()
            ask = "Anthropic API key: " if owner == "Anthropic" else f"API key for {owner}: "
            key = (getpass.getpass(ask) if sys.stdin.isatty()
                   else sys.stdin.readline())
        except (KeyboardInterrupt, EOFError):
            raise Refused("No key was saved.") from None
        cairn.settings.set_api_key(key)  # read back: a keychain that kept nothing is refused
        stdout.write(f"Saved in the system keychain for {cairn.settings.key_owner()} (read "
                     "back to check).\n")
    elif args.action == "forget":
        cairn.settings.forget_api_key()
        stdout.write(f"The stored key for {cairn.settings.key_owner()} is gone from the "
                     "system keychain.\n")
    else:
        if os.environ.get("ANTHROPIC_API_KEY", "").strip():
            stdout.write("A key is set by ANTHROPIC_API_KEY.\n")
        elif cairn.settings.api_key():
            stdout.write(f"A key for {cairn.settings.key_owner()} is stored in the system "
                         "keychain.\n")
        elif cairn.settings.keychain_problem:
            raise Refused(f"No key can be read: {cairn.settings.keychain_problem}; set "
                          "ANTHROPIC_API_KEY instead")
        else:
            stdout.write(f"No key is set for {cairn.settings.key_owner()}: run `cairn key set`, "
                         "or set ANTHROPIC_API_KEY.\n")
    return 0
