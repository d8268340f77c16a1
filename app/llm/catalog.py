"""The models the server offers, from its models endpoint: what each can do, and when it goes.

``GET /v1/models`` gives each model's lifecycle (active, deprecated, retired), retirement
date, limits and capabilities.  Cairn keeps the answer in the data folder (``models.json``,
with the time it was fetched and the server it came from), refreshes it daily and whenever a
call says a model is unknown, and decides every request from it.  A server without that data
(Ollama, LM Studio, llama.cpp, LiteLLM's proxy) gets the conservative request shape: no
thinking, no effort; its knowledge calls try the structured shape first, and what worked is
kept per model and server (``shapes``).

Nothing here switches a person's model: a retired model is refused with a sentence that names
its successor, a deprecated one is announced once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base import locations
from app.errors import Refused

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic as Client

log = logging.getLogger(__name__)

FILE_NAME = "models.json"
REFRESH_AFTER = timedelta(days=1)
RETRY_AFTER = timedelta(minutes=5)
REFRESH_TIMEOUT = 10.0  # seconds: a slow models endpoint never holds a turn for long
EFFORTS = ("low", "medium", "high", "xhigh", "max")

# Tokens below which a prefix is not cached, per model (prompt-caching docs, 2026-11-30).
CACHE_MINIMUM: dict[str, int] = {
    "claude-haiku-5-5": 512,
    "claude-haiku-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
}
DEFAULT_CACHE_MINIMUM = 1024  # Sonnet and the other Claude models

SETTING_FOR = {"chat": "model.chat", "knowledge": "model.knowledge"}


def estimate_tokens(value: Any) -> int:
    """A rough token count (characters of the compact JSON over four), to place breakpoints."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) // 4


# Web search and fetch versions (server tools).  A model the list describes gets the newest; one
# it does not (a compatible local server) the first versions, which every server that speaks
# web search knows.
NEWEST_WEB_TOOLS = ("web_search_20260318", "web_fetch_20260318")
FIRST_WEB_TOOLS = ("web_search_20250305", "web_fetch_20250910")


def _support(node: Any, *path: str) -> bool:
    for key in path:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
    return isinstance(node, dict) and node.get("supported") is True


def _shape_key(model_id: str, server: str | None) -> str:
    """Shapes are learnt per model and server: one proxy's "claude-x" is not another's."""
    return model_id if server is None else f"{model_id} @ {server}"


def _day(stamp: str | None) -> str | None:
    return stamp[:10] if stamp else None


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model as the endpoint describes it; ``described`` is False without capability data."""

    id: str
    display_name: str
    lifecycle: str  # active | deprecated | retired
    line: str | None
    created_at: str
    deprecated_at: str | None
    retires_at: str | None
    max_input_tokens: int | None
    max_tokens: int | None
    described: bool
    structured_outputs: bool
    thinking_adaptive: bool
    thinking_enabled: bool
    effort: bool
    efforts: tuple[str, ...]
    image_input: bool
    pdf_input: bool
    web_search: bool = False  # the API runs web search (and fetch) for it: server tools

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> ModelInfo:
        caps = raw.get("capabilities")
        model_id = str(raw.get("id", ""))
        line = raw.get("line")
        if not line:
            # The endpoint may leave `line` out; Claude ids name their line (claude-<line>-…).
            found = re.match(r"^claude-([a-z]+)-", model_id)
            line = found.group(1) if found else None
        effort = caps.get("effort") if isinstance(caps, dict) else None
        levels = tuple(level for level in EFFORTS if _support(effort, level))
        return cls(
            id=model_id,
            display_name=str(raw.get("display_name") or model_id),
            lifecycle=str(raw.get("lifecycle") or "active"),
            line=line,
            created_at=str(raw.get("created_at") or ""),
            deprecated_at=raw.get("deprecated_at"),
            retires_at=raw.get("retires_at"),
            max_input_tokens=raw.get("max_input_tokens"),
            max_tokens=raw.get("max_tokens"),
            described=isinstance(caps, dict),
            structured_outputs=_support(caps, "structured_outputs"),
            thinking_adaptive=_support(caps, "thinking", "types", "adaptive"),
            thinking_enabled=_support(caps, "thinking", "types", "enabled"),
            effort=_support(caps, "effort"),
            # A model that says effort is supported but lists no levels takes the usual ones.
            efforts=levels or (("low", "medium", "high") if _support(caps, "effort") else ()),
            image_input=_support(caps, "image_input"),
            pdf_input=_support(caps, "pdf_input"),
            web_search=_support(caps, "server_tools", "web_search"),
        )

    @property
    def refuses_forced_tool(self) -> bool:
        """Today's thinking models (adaptive thinking only) refuse a forced ``tool_choice``."""
        return self.described and self.thinking_adaptive and not self.thinking_enabled

    def web_tools(self) -> tuple[str, str] | None:
        """The web search and web fetch tool versions to offer: the newest this SDK knows
        (``anthropic.types.WebSearchTool20260318Param``, ``WebFetchTool20260318Param``) for a
        model that says it supports web search; None for one that says it does not."""
        if self.described and not self.web_search:
            return None
        return NEWEST_WEB_TOOLS if self.described else FIRST_WEB_TOOLS

    @property
    def cache_minimum(self) -> int:
        return CACHE_MINIMUM.get(self.id, DEFAULT_CACHE_MINIMUM)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "display_name": self.display_name, "lifecycle": self.lifecycle,
                "line": self.line, "created_at": self.created_at,
                "deprecated_at": self.deprecated_at, "retires_at": self.retires_at,
                "max_input_tokens": self.max_input_tokens, "max_tokens": self.max_tokens,
                "capabilities": {"described": self.described,
                                 "structured_outputs": self.structured_outputs,
                                 "thinking_adaptive": self.thinking_adaptive,
                                 "thinking_enabled": self.thinking_enabled,
                                 "effort": list(self.efforts) if self.effort else [],
                                 "image_input": self.image_input, "pdf_input": self.pdf_input,
                                 "web_search": self.web_search}}


class Catalog:
    """The cached models list of one data folder, and what Cairn learnt per model.

    Thread-safe; the file is small and replaced atomically, so a crash never leaves half of it.
    The methods that write it (``deprecation_notice``, ``remember_shape``) are for a worker
    thread; ``refresh`` writes it on one of its own, so no event loop waits on the disk.
    """

    def __init__(self, folder: Path, *, now: Callable[[], datetime] | None = None) -> None:
        self._path = folder / FILE_NAME
        self._now = now or (lambda: datetime.now(timezone.utc))
        self._lock = threading.Lock()
        self._tried: tuple[str, datetime] | None = None  # the last failed fetch, per server
        self._state: dict[str, Any] = {"fetched_at": None, "server": None, "models": [],
                                       "shapes": {}, "warned": []}
        try:
            loaded = json.loads(self._path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict) and isinstance(loaded.get("models"), list):
                self._state.update(loaded)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as error:  # a damaged cache is only a cache: fetch again
            log.warning("the models cache could not be read (%s); it will be fetched again",
                        type(error).__name__)
        self._models = self._parse(self._state["models"])

    @staticmethod
    def _parse(raw: list[Any]) -> dict[str, ModelInfo]:
        return {m["id"]: ModelInfo.from_api(m) for m in raw if isinstance(m, dict) and m.get("id")}

    # ----------------------------------------------------------------- reading

    def info(self, model_id: str) -> ModelInfo | None:
        found = self._models.get(model_id)
        if found is None:
            dated = re.match(r"^(.+)-\d{8}$", model_id)  # a dated id shares its alias' data
            found = self._models.get(dated.group(1)) if dated else None
        return found

    def name(self, model_id: str) -> str:
        """What to call *model_id*: the server's display name once the list is fetched, until
        then one read from the id ("claude-sonnet-4-5" → "Claude Sonnet 4.5"), never the
        raw id of an Anthropic model (issue 36)."""
        info = self.info(model_id)
        return info.display_name if info is not None else readable_name(model_id)

    def models(self) -> list[ModelInfo]:
        """Newest first, as the endpoint lists them."""
        return sorted(self._models.values(), key=lambda m: m.created_at, reverse=True)

    @property
    def fetched_at(self) -> str | None:
        return self._state.get("fetched_at")

    def has_list(self, server: str) -> bool:
        """Whether a list from *server* was ever fetched (even an empty one)."""
        return bool(self._state.get("fetched_at")) and self._state.get("server") == server

    def stale(self, server: str) -> bool:
        fetched = self._state.get("fetched_at")
        if not fetched or self._state.get("server") != server:
            return True
        try:
            age = self._now() - datetime.fromisoformat(fetched)
        except ValueError:
            return True
        return age > REFRESH_AFTER or age < timedelta(0)

    def successor(self, model_id: str) -> ModelInfo | None:
        """The newest active model of the same line, other than *model_id* itself."""
        current = self.info(model_id)
        line = current.line if current else ModelInfo.from_api({"id": model_id}).line
        if not line:
            return None
        candidates = [m for m in self._models.values()
                      if m.line == line and m.lifecycle == "active" and m.id != model_id]
        return max(candidates, key=lambda m: m.created_at, default=None)

    # ----------------------------------------------------------------- refreshing

    async def refresh(self, client: Client, server: str) -> bool:
        """Fetch the models list; False (and the old list kept) when the server gives none."""
        return await self.fetch(client, server) is None

    async def fetch(self, client: Client, server: str) -> BaseException | None:
        """Fetch the models list; the error that kept it when the server gives none (the old
        list kept), for a caller that explains it.

        A server without the endpoint (404) is remembered as offering no data, so its
        conservative request shape is decided without asking again until the next refresh.
        """
        raw, error = await self.probe(client)
        if raw is None:
            self._tried = (server, self._now())
            return error
        await asyncio.to_thread(self._replace, raw, server)  # it writes the file
        return None

    async def probe(self, client: Client) -> tuple[list[dict[str, Any]] | None,
                                                   BaseException | None]:
        """The models list as *client*'s server gives it, kept nowhere: ``(models, None)``,
        or ``(None, the error)`` (a server without the endpoint lists nothing: ``[]``)."""
        import anthropic

        try:
            quick = client.with_options(timeout=REFRESH_TIMEOUT, max_retries=0)
            async with asyncio.timeout(REFRESH_TIMEOUT):  # the whole list, pages and all
                return [m.model_dump(mode="json")
                        async for m in quick.models.list(limit=1000)], None
        except TimeoutError:
            log.info("the models endpoint did not answer in time")
            return None, Refused(f"the server did not send its models list within "
                                 f"{REFRESH_TIMEOUT:g} seconds")
        except anthropic.NotFoundError:
            return [], None
        except (anthropic.APIError, OSError) as error:
            log.info("the models endpoint did not answer: %s", type(error).__name__)
            return None, error
        except Exception as error:  # a web page, or JSON of another shape: no list at all
            log.info("the models endpoint answered garbage: %s", type(error).__name__)
            return None, Refused("the server's models list is not what Anthropic's API sends "
                                 "(a web page, or another kind of server at this address?)")

    async def ensure_fresh(self, client: Client, server: str, *, force: bool = False) -> None:
        if not force and self._tried is not None and self._tried[0] == server \
                and self._now() - self._tried[1] < RETRY_AFTER:
            return  # it failed a moment ago: do not hold every turn up asking again
        if force or self.stale(server):
            await self.refresh(client, server)

    def _replace(self, raw: list[dict[str, Any]], server: str) -> None:
        with self._lock:
            self._state["models"] = raw
            self._state["server"] = server
            self._state["fetched_at"] = self._now().isoformat()
            self._models = self._parse(raw)
            self._save()

    def _save(self) -> None:
        """Write the cache atomically; a failure to write only costs a fetch next time."""
        partial = self._path.with_name(FILE_NAME + ".partial")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(self._state, indent=1), encoding="utf-8")
            locations.make_private(partial)
            os.replace(partial, self._path)
        except OSError as error:
            log.warning("the models cache could not be written: %s", type(error).__name__)

    # ----------------------------------------------------------------- what was learnt

    def knowledge_shape(self, model_id: str, server: str | None = None) -> str:
        """How the rebuild asks this model for its ops: ``structured`` or ``tool``.

        What worked before with this model on *server* wins; else what the models list
        says; a model it does not describe (a proxy's, a local server's) is asked for the
        structured shape first, which today's models take and a forced tool they refuse."""
        remembered = self._state["shapes"].get(_shape_key(model_id, server))
        if remembered in ("structured", "tool"):
            return str(remembered)
        info = self.info(model_id)
        if info is None or not info.described:
            return "structured"
        return "structured" if info.structured_outputs else "tool"

    def knows_shape(self, model_id: str, server: str | None = None) -> bool:
        """Whether a shape was learnt for this model on *server* (it answered in it)."""
        return self._state["shapes"].get(_shape_key(model_id, server)) in ("structured", "tool")

    def remember_shape(self, model_id: str, shape: str, server: str | None = None) -> None:
        """Kept in the file: the next start does not ask the other way first again."""
        with self._lock:
            key = _shape_key(model_id, server)
            if self._state["shapes"].get(key) == shape:
                return
            self._state["shapes"][key] = shape
            self._save()

    # ----------------------------------------------------------------- lifecycle

    def check_usable(self, model_id: str, purpose: str) -> None:
        """Refuse a retired model with one sentence naming its successor and how to switch."""
        info = self.info(model_id)
        if info is None or info.lifecycle != "retired":
            return
        when = f" on {_day(info.retires_at)}" if info.retires_at else ""
        raise Refused(f"The {purpose} model {info.display_name} ('{model_id}') was retired"
                      f"{when}; {self._switch(model_id, purpose)}")

    def deprecation_notice(self, model_id: str, purpose: str) -> str | None:
        """Once per model and data folder: the model is deprecated, when it retires, and the
        successor.  None when there is nothing (new) to say."""
        info = self.info(model_id)
        if info is None or info.lifecycle != "deprecated":
            return None
        with self._lock:
            if model_id in self._state["warned"]:
                return None
            self._state["warned"].append(model_id)
            self._save()
        when = (f" and retires on {_day(info.retires_at)}" if info.retires_at
                else " and will be retired")
        return (f"The {purpose} model {info.display_name} ('{model_id}') is deprecated{when}; "
                f"{self._switch(model_id, purpose)}")

    def not_found(self, model_id: str, purpose: str) -> str:
        """The sentence for a call that says the model does not exist (after a refresh)."""
        info = self.info(model_id)
        if info is not None and info.lifecycle == "retired":
            when = f" on {_day(info.retires_at)}" if info.retires_at else ""
            return (f"The {purpose} model {info.display_name} ('{model_id}') was retired{when}; "
                    f"{self._switch(model_id, purpose)} Your message is kept.")
        return (f"The {purpose} model '{model_id}' was not found on this server; "
                f"{self._switch(model_id, purpose)} Your message is kept.")

    def _switch(self, model_id: str, purpose: str) -> str:
        setting = SETTING_FOR.get(purpose, "model.chat")
        successor = self.successor(model_id)
        if successor is None:
            return (f"choose another model in Settings or with `cairn settings set {setting} "
                    "MODEL` (`cairn models` lists them).")
        return (f"switch to {successor.display_name} ('{successor.id}') in Settings or with "
                f"`cairn settings set {setting} {successor.id}`.")


def readable_name(model_id: str) -> str:
    """An Anthropic model id as its name reads ("claude-3-5-haiku-20241022" → "Claude 3.5
    Haiku"); any other id (a local server's) as it is."""
    if not re.fullmatch(r"claude(-[a-z]+|-\d{1,2})+(-\d{8})?", model_id):
        return model_id
    parts = re.sub(r"-\d{8}$", "", model_id).split("-")
    words: list[str] = []
    for part in parts:
        if part.isdigit() and words and re.fullmatch(r"\d+(\.\d+)*", words[-1]):
            words[-1] += "." + part
        else:
            words.append(part if part.isdigit() else part.capitalize())
    return " ".join(words)
