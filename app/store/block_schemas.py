"""The strict shape of every content block Cairn stores, as pydantic models: an unknown key,
a missing one or a value of the wrong type is refused (``extra="forbid"``, ``strict``).

Each kind's declaration in :mod:`app.store.blocks` names its model here.  The models follow
the SDK's own types (``anthropic.types``: ``TextBlock``, ``ServerToolUseBlock``,
``WebSearchToolResultBlock``, ``WebFetchToolResultBlock``…) as ``model_dump(exclude_none=True)``
stores them, so a reply's blocks are kept and sent back verbatim.  Imported only when content
is checked (an import, a bundle): pydantic costs a third of a second to load, which
``cairn workspace list`` must not pay.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from app.base.paths import shown
from app.store.blocks import kind_of


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# ----------------------------------------------------------------- citations (text blocks)


class CharLocation(Strict):
    type: Literal["char_location"]
    cited_text: StrictStr
    document_index: StrictInt
    document_title: StrictStr | None = None
    start_char_index: StrictInt
    end_char_index: StrictInt
    file_id: StrictStr | None = None


class PageLocation(Strict):
    type: Literal["page_location"]
    cited_text: StrictStr
    document_index: StrictInt
    document_title: StrictStr | None = None
    start_page_number: StrictInt
    end_page_number: StrictInt
    file_id: StrictStr | None = None


class ContentBlockLocation(Strict):
    type: Literal["content_block_location"]
    cited_text: StrictStr
    document_index: StrictInt
    document_title: StrictStr | None = None
    start_block_index: StrictInt
    end_block_index: StrictInt
    file_id: StrictStr | None = None


class WebSearchResultLocation(Strict):
    type: Literal["web_search_result_location"]
    cited_text: StrictStr
    encrypted_index: StrictStr
    url: StrictStr
    title: StrictStr | None = None


class SearchResultLocation(Strict):
    type: Literal["search_result_location"]
    cited_text: StrictStr
    search_result_index: StrictInt
    source: StrictStr
    start_block_index: StrictInt
    end_block_index: StrictInt
    title: StrictStr | None = None


Citation = Annotated[CharLocation | PageLocation | ContentBlockLocation
                     | WebSearchResultLocation | SearchResultLocation,
                     Field(discriminator="type")]


# ----------------------------------------------------------------- who called a tool


class DirectCaller(Strict):
    type: Literal["direct"]


class ServerCaller(Strict):
    type: Literal["code_execution_20250825", "code_execution_20260120"]
    tool_id: StrictStr


Caller = Annotated[DirectCaller | ServerCaller, Field(discriminator="type")]


# ----------------------------------------------------------------- the kinds


class TextBlock(Strict):
    type: Literal["text"]
    text: StrictStr
    citations: list[Citation] | None = None


class ThinkingBlock(Strict):
    type: Literal["thinking"]
    thinking: StrictStr
    signature: StrictStr


class RedactedThinkingBlock(Strict):
    type: Literal["redacted_thinking"]
    data: StrictStr


class ToolUseBlock(Strict):
    type: Literal["tool_use"]
    id: StrictStr
    name: StrictStr
    input: Any  # whatever the model sent: replay turns a wrong shape into {}
    caller: Caller | None = None
    toolset_name: StrictStr | None = None


class AttachmentBlock(Strict):
    """A file the person attached (or a tool read): a reference to a stored blob, sent as a
    ``document`` (PDF), an ``image`` or a text block when replayed."""

    type: Literal["attachment"]
    name: StrictStr
    media_type: StrictStr
    size: Annotated[StrictInt, Field(ge=0)]
    sha256: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]


class ResultText(Strict):
    type: Literal["text"]
    text: StrictStr


ResultPart = Annotated[ResultText | AttachmentBlock, Field(discriminator="type")]


class ToolResultBlock(Strict):
    type: Literal["tool_result"]
    tool_use_id: StrictStr
    content: list[ResultPart]
    is_error: StrictBool | None = None


class ServerToolUseBlock(Strict):
    type: Literal["server_tool_use"]
    id: StrictStr
    name: StrictStr
    input: dict[str, Any]
    caller: Caller | None = None


class WebSearchResult(Strict):
    type: Literal["web_search_result"]
    url: StrictStr
    title: StrictStr
    encrypted_content: StrictStr
    page_age: StrictStr | None = None


class WebSearchError(Strict):
    type: Literal["web_search_tool_result_error"]
    error_code: StrictStr


class WebSearchToolResultBlock(Strict):
    type: Literal["web_search_tool_result"]
    tool_use_id: StrictStr
    content: list[WebSearchResult] | WebSearchError
    caller: Caller | None = None


class Base64PDF(Strict):
    type: Literal["base64"]
    media_type: Literal["application/pdf"]
    data: StrictStr


class PlainText(Strict):
    type: Literal["text"]
    media_type: Literal["text/plain"]
    data: StrictStr


class CitationsConfig(Strict):
    enabled: StrictBool


class FetchedDocument(Strict):
    type: Literal["document"]
    source: Annotated[Base64PDF | PlainText, Field(discriminator="type")]
    title: StrictStr | None = None
    citations: CitationsConfig | None = None


class WebFetchResult(Strict):
    type: Literal["web_fetch_result"]
    url: StrictStr
    content: FetchedDocument
    retrieved_at: StrictStr | None = None


class WebFetchError(Strict):
    type: Literal["web_fetch_tool_result_error"]
    error_code: StrictStr


class WebFetchToolResultBlock(Strict):
    type: Literal["web_fetch_tool_result"]
    tool_use_id: StrictStr
    content: Annotated[WebFetchResult | WebFetchError, Field(discriminator="type")]
    caller: Caller | None = None


# ----------------------------------------------------------------- refusals as sentences


def said(where: str, value: Any, error: Any) -> tuple[str, str]:
    """A pydantic error as Cairn says it: the field's place under *where* in *value* (without
    pydantic's own tags for union branches), and why ("should be text, not a whole number").
    The content check and the bundle's manifest both say their refusals so."""
    kind, loc = error["type"], error["loc"]
    path: str = where
    for n, part in enumerate(loc):
        last = n == len(loc) - 1
        if isinstance(value, dict) and isinstance(part, str) and (
                part in value or (last and kind == "missing")):
            name = shown(part[:40])
            path, value = (f"{path}.{name}" if path else name), value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            path, value = f"{path}[{part}]", value[part]
    got = error.get("input")
    if kind == "missing":
        return (path, "is missing")
    if kind == "extra_forbidden":
        return (path, "is not a field Cairn knows")
    if kind in ("union_tag_invalid", "literal_error") and isinstance(value, dict):
        tag = value.get("type")
        return (path, f"is content Cairn does not write: '{shown(str(tag)[:40])}'")
    if kind == "union_tag_not_found":
        return (path, "should be an object with a type")
    why = {"string_type": "should be text", "int_type": "should be a whole number",
           "bool_type": "should be true or false", "list_type": "should be a list",
           "dict_type": "should be an object", "model_type": "should be an object",
           "model_attributes_type": "should be an object"}.get(kind)
    if why is not None:
        return (path, f"{why}, not {kind_of(got)}")
    if kind == "string_pattern_mismatch":
        return (path, "should be 64 lowercase hexadecimal digits")
    if kind == "greater_than_equal":
        return (path, "should be a whole number from 0")
    return (path, "is not what Cairn writes")

