"""Find anything: queries over the search index (see :mod:`app.store.search_index`).

Two FTS5 tables answer: ``search_message`` (a message's text, rowid = the message's id) and
``search_doc`` (chat titles, knowledge entries, files: rowid = ``search_key.n``).  Each is
ranked with FTS5's bm25 — titles weigh 10, a knowledge entry's text and a file's description
4, a file's content and a message's text 1 — over its newest matches (see
:meth:`Search._ranked`), and the two lists are merged on that score, newer first on ties.
Snippets are cut here, for the results shown only, around the first matched word: plain text
and the marked words' offsets, never markup.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.base.db import Database
from app.errors import Refused
from app.store import search_index, search_query
from app.store.search_index import MARK_CLOSE, MARK_OPEN
from app.store.search_query import Query

PERSONAL = "personal"
# bm25's weights: title, body (an entry, a description), a file's content; kind and owner
# are filters, never scored.
DOC_WEIGHTS = (10.0, 4.0, 1.0, 0.0, 0.0)
# How many of the newest matches (that pass the filters) are ranked.
RANKED = 300


@dataclass(frozen=True, slots=True)
class Hit:
    kind: str  # message | chat | knowledge | file
    title: str
    snippet: str  # plain text
    marks: tuple[tuple[int, int], ...]  # [start, end) of each matched word in the snippet
    when: str
    workspace: str | None = None
    chat: str | None = None
    message: int | None = None
    file: str | None = None
    owner: str | None = None  # a knowledge entry's document
    line: int | None = None  # a knowledge entry's first line in its document
    section: str | None = None
    folder: str | None = None  # the workspace's folder
    score: float = 0.0
    row: int = 0  # its row in the index (search_message's or search_doc's rowid)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"kind": self.kind, "workspace": self.workspace}
        if self.kind in ("message", "chat"):
            found["chat"] = self.chat
        if self.kind == "message":
            found["message"] = self.message
        if self.kind == "file":
            found["file"] = self.file
        if self.kind == "knowledge":
            found.update(owner=self.owner, section=self.section, line=self.line,
                         folder=self.folder)
        found.update(title=self.title, snippet=self.snippet,
                     marks=[list(m) for m in self.marks], when=self.when)
        return found

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The snippet with each matched word between *before* and *after* (for a terminal)."""
        out, at = [], 0
        for start, end in self.marks:
            out += [self.snippet[at:start], before, self.snippet[start:end], after]
            at = end
        return "".join(out) + self.snippet[at:]


def unmark(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """FTS5's snippet (marks as U+E000/U+E001) as plain text and the marked spans."""
    plain: list[str] = []
    marks: list[tuple[int, int]] = []
    length, start = 0, None
    for char in text:
        if char == MARK_OPEN:
            start = length
        elif char == MARK_CLOSE:
            if start is not None and length > start:
                marks.append((start, length))
            start = None
        else:
            plain.append(char)
            length += 1
    return "".join(plain), tuple(marks)


class Search:
    """The index's queries, on read connections (never waiting on a writer)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def problem(self) -> str | None:
        return search_index.problem(self._db)

    def find(self, query: Query, *, limit: int = 20, workspaces: Sequence[str] | None = None
             ) -> list[Hit]:
        """The best *limit* results of *query*, best first.  *workspaces* restricts them to
        those workspace ids (the command line's ``--workspace``); ``workspace:NAME`` in the
        query is resolved to ids here."""
        if limit < 1:
            raise Refused(f"cannot show {limit} results: ask for at least 1")
        if query.empty:
            return []
        ws_ids = list(workspaces) if workspaces is not None else None
        if query.workspace is not None:
            named = self._workspaces_named(query.workspace)
            ws_ids = named if ws_ids is None else [w for w in ws_ids if w in named]
        match = query.match()
        kinds = [k for k, wanted in (("chat", "chats"), ("knowledge", "knowledge"),
                                     ("file", "files"))
                 if not query.kinds or wanted in query.kinds]
        try:
            hits = (self._messages(match, query, ws_ids, limit)
                    if not query.kinds or "chats" in query.kinds else [])
            hits += self._docs(match, query, ws_ids, kinds, limit)
        except sqlite3.OperationalError as error:
            if "no such table" in str(error) or "fts5" in str(error).lower():
                raise Refused(search_index.MISSING) from error
            raise
        except sqlite3.DatabaseError as error:
            raise Refused(search_index.MISSING) from error
        hits.sort(key=lambda h: (h.score, _newest_first(h.when), -(h.message or 0)))
        return self._with_snippets(hits[:limit], query)

    def _workspaces_named(self, name: str) -> list[str]:
        rows = self._db.query("SELECT id, title FROM workspace")
        wanted = name.casefold()
        exact = [r[0] for r in rows if r[1].casefold() == wanted]
        found = exact or [r[0] for r in rows if r[1].casefold().startswith(wanted)]
        if not found:
            raise Refused(f"cannot search in workspace '{name[:80]}': no workspace has that name")
        return found

    # ----------------------------------------------------------------- messages

    def _messages(self, match: str, query: Query, ws_ids: list[str] | None, limit: int
                  ) -> list[Hit]:
        where = ["search_message MATCH ?"]
        expression = f"text : ({match})"
        if ws_ids is not None:  # the workspace's chats, as a filter FTS5 applies itself
            chats = [r[0] for r in self._db.query(
                f"SELECT chat_id FROM membership WHERE workspace_id IN ({_marks(ws_ids)})",
                ws_ids)]
            if not chats:
                return []
            expression += " AND chat : (" + " OR ".join(
                f'"{search_index.token(c)}"' for c in chats) + ")"
        params: list[object] = [expression]
        join = "JOIN chat AS c ON c.id = s.chat_id"
        if not query.archived:
            where.append("c.archived_at IS NULL")
        _dates(where, params, query, "s.at")
        if not self._day_ids(where, params, query):
            return []
        rows = self._ranked(
            "s.rowid AS rowid, s.chat_id, s.at AS at", "search_message", "s",
            (1.0, 0.0), f"FROM search_message AS s {join} WHERE {' AND '.join(where)}",
            params, limit)
        if not rows:
            return []
        chats_shown = self._chats({r[1] for r in rows})
        hits = []
        for rowid, chat_id, at, score in ((r[0], r[1], r[2], r[-1]) for r in rows):
            title, ws_id = chats_shown.get(chat_id, ("", None))
            hits.append(Hit("message", title, "", (), at, workspace=ws_id, chat=chat_id,
                            message=rowid, score=score, row=rowid))
        return hits

    def _day_ids(self, where: list[str], params: list[object], query: Query) -> bool:
        """The dates of *query* also as a range of message ids (``message_day``), which FTS5
        walks itself: without it, ``before:`` a year ago walks every newer match first.
        False when no message was written in the dates asked."""
        for day, sql, compare in (
                (query.before, "SELECT max(last_id) FROM message_day WHERE day < ?", "<="),
                (query.after, "SELECT min(first_id) FROM message_day WHERE day >= ?", ">=")):
            if day is not None:
                bound = self._db.query(sql, (day,))[0][0]
                if bound is None:
                    return False
                where.append(f"s.rowid {compare} ?")
                params.append(bound)
        return True

    def _ranked(self, columns: str, table: str, alias: str, weights: tuple[float, ...],
                sql: str, params: Sequence[object], limit: int) -> list[tuple[Any, ...]]:
        """The best *limit* rows of *sql* (``FROM`` a match with its filters; the FTS5 table,
        *table*, as *alias*), each with *columns* and its bm25 score last (FTS5's own, with
        the fields' *weights*; lower is better), newer first on ties.

        Ranked are the newest :data:`RANKED` matches that pass the filters: FTS5 walks a
        word's rows newest first without sorting, so those cost what they are, while bm25
        over every match of a common word (half of 500,000 messages) costs 200 ms.  (bm25's
        idf still counts every match of each word: that is most of what a query costs.)  A
        query with fewer matches is ranked whole.  Each row's ``at`` column is its time
        (ISO), for "newer first" on ties.
        """
        weighted = ", ".join(f"{w:.1f}" for w in weights)
        return self._db.query(
            f"SELECT * FROM (SELECT {columns}, bm25({table}, {weighted}) AS score {sql}"
            f" ORDER BY {alias}.rowid DESC LIMIT {RANKED})"
            f" ORDER BY score, at DESC, rowid DESC LIMIT {int(limit)}", params)

    def _with_snippets(self, hits: list[Hit], query: Query) -> list[Hit]:
        """The results shown, each with its snippet: read by rowid (no second MATCH, which
        would expand every prefix again) and cut around the first matched word here."""
        terms = _terms(query)
        messages = [h.row for h in hits if h.kind == "message"]
        docs = [h.row for h in hits if h.kind != "message"]
        texts: dict[tuple[bool, int], list[str]] = {}
        if messages:
            texts.update(((True, r[0]), [r[1]]) for r in self._db.query(
                f"SELECT rowid, text FROM search_message WHERE rowid IN ({_marks(messages)})",
                messages))
        if docs:
            texts.update(((False, r[0]), list(r[1:])) for r in self._db.query(
                f"SELECT rowid, title, body, content FROM search_doc"
                f" WHERE rowid IN ({_marks(docs)})", docs))
        done = []
        for hit in hits:
            columns = texts.get((hit.kind == "message", hit.row), ["", "", ""])
            if hit.kind == "knowledge":  # the entry without its list mark, then its section
                columns = [_LIST_MARK.sub("", columns[1], count=1), columns[0]]
            elif hit.kind == "file":  # its description, then its text (the name is the title)
                columns = columns[1:]
            text, marks = snippet(columns, terms)
            done.append(replace(hit, snippet=text, marks=marks))
        return done

    def _chats(self, chat_ids: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        ids = list(chat_ids)
        if not ids:
            return {}
        rows = self._db.query(
            f"SELECT c.id, c.title, m.workspace_id FROM chat AS c LEFT JOIN membership AS m"
            f" ON m.chat_id = c.id WHERE c.id IN ({_marks(ids)})", ids)
        return {r[0]: (r[1], r[2]) for r in rows}

    # ----------------------------------------------------------------- chats, knowledge, files

    def _docs(self, match: str, query: Query, ws_ids: list[str] | None, kinds: list[str],
              limit: int) -> list[Hit]:
        """Chat titles, knowledge entries and files.  With a workspace filter, knowledge and
        files are filtered by FTS5 (their owner is a token) and chat titles by membership
        (a chat moves between workspaces without its row changing)."""
        if ws_ids is None:
            return self._doc_rows(match, query, kinds, None, limit)
        hits = []
        owned = [k for k in kinds if k != "chat"]
        if owned:
            hits += self._doc_rows(match, query, owned, ws_ids, limit)
        if "chat" in kinds:
            hits += self._doc_rows(match, query, ["chat"], ws_ids, limit)
        return hits

    def _doc_rows(self, match: str, query: Query, kinds: list[str], ws_ids: list[str] | None,
                  limit: int) -> list[Hit]:
        expression = f"{{title body content}} : ({match})"
        if len(kinds) < 3:
            expression += " AND kind : (" + " OR ".join(f'"{k}"' for k in kinds) + ")"
        where = ["search_doc MATCH ?",
                 # knowledge and files of a removed workspace wait for its restore, unseen
                 "(k.kind = 'chat' OR k.owner = 'personal' OR k.owner IN"
                 " (SELECT id FROM workspace))"]
        params: list[object] = []
        if ws_ids is not None and kinds == ["chat"]:
            where.append(f"k.ref IN (SELECT chat_id FROM membership WHERE workspace_id IN"
                         f" ({_marks(ws_ids)}))")
            params += ws_ids
        elif ws_ids is not None:
            expression += " AND owner : (" + " OR ".join(
                f'"{search_index.token(w)}"' for w in ws_ids) + ")"
        params.insert(0, expression)
        if not query.archived:
            where.append("(k.kind != 'chat' OR c.archived_at IS NULL)")
        _dates(where, params, query, "coalesce(c.updated_at, k.at)")
        rows = self._ranked(
            "d.rowid AS rowid, k.kind, k.ref, k.owner, k.part,"
            " coalesce(c.updated_at, k.at) AS at, d.title", "search_doc", "d",
            DOC_WEIGHTS,
            "FROM search_doc AS d JOIN search_key AS k ON k.n = d.rowid"
            " LEFT JOIN chat AS c ON k.kind = 'chat' AND c.id = k.ref"
            f" WHERE {' AND '.join(where)}", params, limit)
        if not rows:
            return []
        chats = self._chats(r[2] for r in rows if r[1] == "chat")
        owners = {r[3] for r in rows if r[1] != "chat"}
        places = self._places(owners)
        hits = []
        for rowid, kind, ref, owner, part, at, title, score in (r[:7] + r[-1:] for r in rows):
            if kind == "chat":
                chat_title, ws_id = chats.get(ref, (title, None))
                hits.append(Hit("chat", chat_title, "", (), at, workspace=ws_id, chat=ref,
                                score=score, row=rowid))
            elif kind == "knowledge":
                ws_title, folder = places.get(owner, ("", None))
                name = "Personal memory" if owner == PERSONAL else ws_title
                heading = f"{name} › {title}" if title else name
                hits.append(Hit("knowledge", heading, "", (), at,
                                workspace=None if owner == PERSONAL else owner, owner=owner,
                                line=part, section=title or None, folder=folder, score=score,
                                row=rowid))
            else:
                hits.append(Hit("file", title, "", (), at, workspace=owner, file=ref,
                                folder=places.get(owner, ("", None))[1], score=score,
                                row=rowid))
        return hits

    def _places(self, ws_ids: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        ids = [w for w in ws_ids if w != PERSONAL]
        if not ids:
            return {}
        rows = self._db.query(f"SELECT id, title, path FROM workspace WHERE id IN"
                              f" ({_marks(ids)})", ids)
        return {r[0]: (r[1], r[2]) for r in rows}

    # ----------------------------------------------------------------- find in a chat

    def in_chat(self, chat_id: str, query: Query) -> list[int]:
        """The ids of the chat's messages on its shown path that match *query*, oldest
        first: the whole path, not a page of it (other branches are found by search, not
        by find in the chat)."""
        if query.empty:
            return []
        expression = f'text : ({query.match()}) AND chat : "{search_index.token(chat_id)}"'
        try:
            rows = self._db.query(_ON_PATH + "SELECT rowid FROM search_message WHERE"
                                  " search_message MATCH ? AND rowid IN (SELECT id FROM up)"
                                  " ORDER BY rowid", (chat_id, expression))
        except sqlite3.DatabaseError as error:
            raise Refused(search_index.MISSING) from error
        return [r[0] for r in rows]

    def in_chat_counted(self, chat_id: str, query: Query) -> list[tuple[int, int]]:
        """The chat's matching messages, oldest first, each with how many times its words
        occur in it (at least once): what find in the chat steps through and counts, match
        by match, as the window highlights them (each word, any case, where it occurs)."""
        if query.empty:
            return []
        expression = f'text : ({query.match()}) AND chat : "{search_index.token(chat_id)}"'
        try:
            rows = self._db.query(_ON_PATH + "SELECT rowid, text FROM search_message WHERE"
                                  " search_message MATCH ? AND rowid IN (SELECT id FROM up)"
                                  " ORDER BY rowid", (chat_id, expression))
        except sqlite3.DatabaseError as error:
            raise Refused(search_index.MISSING) from error
        words = [w.casefold() for w in dict.fromkeys(query.words()) if w]
        return [(r[0], max(1, sum(str(r[1]).casefold().count(w) for w in words)))
                for r in rows]


# The ids of a chat's shown path (issue 38): a walk up from its leaf by primary key.
_ON_PATH = ("WITH RECURSIVE up(id) AS (SELECT leaf_id FROM chat WHERE id = ? UNION ALL"
            " SELECT m.parent_id FROM message AS m JOIN up ON m.id = up.id"
            " WHERE m.parent_id < m.id) ")


def _marks(items: Sequence[object]) -> str:
    return ", ".join("?" * len(items))


def _dates(where: list[str], params: list[object], query: Query, column: str) -> None:
    if query.before is not None:
        where.append(f"{column} < ?")
        params.append(query.before)
    if query.after is not None:
        where.append(f"{column} >= ?")
        params.append(query.after)


def _newest_first(when: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in when)


# ===================================================================== the use case

class Finder:
    """Search as the window and the command line both use it: what is typed, read as a
    query, answered from the index, or refused in one sentence — the index's own problem
    (missing, damaged, unfinished) included, so a result is never silently empty."""

    def __init__(self, db: Database, read_blob: search_index.BlobReader) -> None:
        self._db = db
        self._read_blob = read_blob
        self.search = Search(db)
        self._problem: str | None = None
        self._checked = False

    def check(self) -> str | None:
        """The start-up check (once; again after :meth:`reindex`): the sentence that says
        what is wrong with the index, or None."""
        if not self._checked:
            search_index.complete_pending(self._db, self._read_blob)
            self._problem = search_index.problem(self._db)
            self._checked = True
        return self._problem

    def find(self, text: str, *, in_: str | None = None, workspaces: Sequence[str] | None = None,
             archived: bool = False, limit: int = 20) -> list[Hit]:
        query = search_query.parse(text, in_=in_, archived=archived)
        problem = self.check()
        if problem is not None:
            raise Refused(problem)
        return self.search.find(query, limit=limit, workspaces=workspaces)

    def in_chat(self, chat_id: str, text: str) -> list[int]:
        """The messages of the chat that match *text*, oldest first (find in the chat)."""
        query = search_query.parse(text, archived=True)
        problem = self.check()
        if problem is not None:
            raise Refused(problem)
        return self.search.in_chat(chat_id, query)

    def in_chat_counted(self, chat_id: str, text: str) -> list[tuple[int, int]]:
        """The messages of the chat that match *text*, oldest first, with how many matches
        each holds (find in the chat: "3 of 12" counts matches, not messages)."""
        query = search_query.parse(text, archived=True)
        problem = self.check()
        if problem is not None:
            raise Refused(problem)
        return self.search.in_chat_counted(chat_id, query)

    def words(self, text: str) -> tuple[str, ...]:
        """The words of *text* as a query reads them (what a view highlights)."""
        try:
            return search_query.parse(text).words()
        except Refused:
            return ()

    def reindex(self) -> dict[str, int]:
        """Rebuild the index from scratch (``cairn search --reindex``)."""
        counts = search_index.reindex(self._db, self._read_blob)
        self._checked = False
        return counts


# ===================================================================== snippets

_TOKEN = re.compile(r"[^\W_]+")  # as FTS5's unicode61 splits words
# A knowledge entry's list mark ("- ", "* ", "1. "), left out of its snippet.
_LIST_MARK = re.compile(r"^[ ]{0,3}(?:[-*+]|[0-9]{1,9}[.)])[ \t]+")
SNIPPET_WORDS = 16
SNIPPET_SCAN = 20_000  # characters of a field looked through for a snippet


@functools.lru_cache(maxsize=20_000)
def fold(word: str) -> str:
    """A word as the index compares it: case and diacritics folded (unicode61's
    ``remove_diacritics 2``)."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _terms(query: Query) -> list[tuple[str, bool]]:
    """Each word of the query, folded, and whether it matches as a prefix."""
    found = []
    for words, prefix in query.terms:
        for n, word in enumerate(words):
            last = n == len(words) - 1
            found.append((fold(word), prefix and last and len(word) > 1))
    return found


def snippet(columns: Sequence[str], terms: list[tuple[str, bool]]
            ) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About :data:`SNIPPET_WORDS` words of the first column that holds a matched word,
    around the first one, as plain text with the matched words' spans."""
    patterns = _patterns(terms)
    for text in columns:
        text = text or ""
        if text.isascii():  # (folding keeps its length: start near the first match)
            lowered = text.lower()
            found = [m.start() for p in patterns if (m := p.search(lowered))]
            if not found:
                continue
            begin = max(0, min(found) - 200)
            begin = text.rfind(" ", 0, begin) + 1 if begin else 0
            text = text[begin:begin + 2_000]
            head_cut = begin > 0
        else:
            text, head_cut = text[:SNIPPET_SCAN], False
        # Read as far as the snippet reaches, and one word more (to know that text follows).
        tokens: list[tuple[int, int]] = []
        hits: list[int] = []
        reach = -1
        for found_word in _TOKEN.finditer(text):
            if hits and len(tokens) > reach:
                tokens.append(found_word.span())
                break
            word = fold(found_word.group())
            if any(word.startswith(t) if prefix else word == t for t, prefix in terms):
                if not hits:
                    reach = max(0, len(tokens) - 4) + SNIPPET_WORDS - 1
                hits.append(len(tokens))
            tokens.append(found_word.span())
        if not hits:
            continue
        first = max(0, hits[0] - 4)
        last = min(len(tokens), first + SNIPPET_WORDS) - 1
        start = tokens[first][0] if first > 0 or head_cut else 0  # (the text's own start)
        end = tokens[last][1] if last < len(tokens) - 1 else len(text)
        head = "…" if first > 0 or head_cut else ""
        tail = "…" if last < len(tokens) - 1 else ""
        body = " ".join(text[start:end].split())  # line breaks and runs of space: one space
        marks = []
        # The spans again in the squeezed text: its words are the same tokens, in order.
        squeezed = [(m.start(), m.end()) for m in _TOKEN.finditer(body)]
        for i in hits:
            if first <= i <= last and i - first < len(squeezed):
                s, e = squeezed[i - first]
                marks.append((s + len(head), e + len(head)))
        return head + body + tail, tuple(marks)
    text = next((c for c in columns if c), "")
    short = " ".join(text.split()[:SNIPPET_WORDS])
    return short + ("…" if len(short) < len(" ".join(text.split())) else ""), ()


def _patterns(terms: list[tuple[str, bool]]) -> list[re.Pattern[str]]:
    """Each folded term as a pattern over folded text: a word's start, and its end unless
    it is a prefix."""
    return [re.compile(r"\b" + re.escape(term) + ("" if prefix else r"\b"))
            for term, prefix in terms]
