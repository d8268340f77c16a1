"""Model access: the Anthropic client, prices, and every failure as one sentence.

The key comes from :class:`app.store.settings.Settings` (keychain or ``ANTHROPIC_API_KEY``) and is
handed to the client only; it is never logged or stored here.
"""

from __future__ import annotations

import logging
from typing import Any

import anthropic

from app.errors import CairnError
from app.llm.catalog import Catalog, ModelInfo
from app.store.messages import Usage
from app.store.settings import Settings

log = logging.getLogger(__name__)

# The SDK's types, named here so that layers above import them only for the type checker.
Client = anthropic.AsyncAnthropic
Reply = anthropic.types.Message

class ModelError(CairnError):
    """A model call failed; ``str()`` is the sentence shown, ``kind`` names the case."""

    def __init__(self, sentence: str, *, kind: str) -> None:
        super().__init__(sentence)
        self.kind = kind


def request_options(info: ModelInfo | None, *, effort: str, max_tokens: int) -> dict[str, Any]:
    """What a request to this model may carry beyond the basics, decided from its data.

    A model the endpoint does not describe (a local server, an older proxy) gets nothing
    extra: no thinking, no effort, no structured outputs.  No request ever sends
    ``temperature``, ``top_p`` or ``top_k``: today's models refuse them.
    """
    options: dict[str, Any] = {"max_tokens": max_tokens}
    if info is None:
        return options
    if info.max_tokens:
        options["max_tokens"] = min(max_tokens, info.max_tokens)
    if info.thinking_adaptive:
        options["thinking"] = {"type": "adaptive"}
    if effort and info.effort and effort in info.efforts:
        options["output_config"] = {"effort": effort}
    return options


def usage_of(raw: anthropic.types.Usage) -> Usage:
    return Usage(
        input=getattr(raw, "input_tokens", 0) or 0,
        cache_write=getattr(raw, "cache_creation_input_tokens", 0) or 0,
        cache_read=getattr(raw, "cache_read_input_tokens", 0) or 0,
        output=getattr(raw, "output_tokens", 0) or 0,
    )


def make_client(settings: Settings) -> anthropic.AsyncAnthropic:
    key = settings.api_key()
    if not key:
        if settings.keychain_problem:
            raise ModelError(f"No API key: {settings.keychain_problem}. Set ANTHROPIC_API_KEY "
                             "to give Cairn your key.", kind="no-key")
        raise ModelError(
            "No API key is set. Add your Anthropic API key in Settings or with `cairn key set` "
            "(Cairn keeps it in your system keychain), or set ANTHROPIC_API_KEY.", kind="no-key")
    # The SDK retries 429, 5xx and connection errors with backoff; we never loop on top.
    return anthropic.AsyncAnthropic(api_key=key, base_url=settings.base_url(), max_retries=2)


def explain(error: BaseException, *, model: str, catalog: Catalog | None = None,
            purpose: str = "chat") -> ModelError:
    """One sentence a person understands, for every way a call can fail."""
    if isinstance(error, ModelError):
        return error
    if isinstance(error, CairnError):  # refused before any call (a retired model, say)
        return ModelError(str(error), kind="refused")
    if isinstance(error, anthropic.APITimeoutError):
        return ModelError("Anthropic took too long to answer. Your message is kept; send it "
                          "again.", kind="timeout")
    if isinstance(error, anthropic.APIConnectionError):
        return ModelError("Cannot reach Anthropic. Check your internet connection (or the base "
                          "URL, in Settings or with `cairn settings show`); your message is kept.",
                          kind="network")
    if isinstance(error, anthropic.AuthenticationError):
        return ModelError("Anthropic rejected the API key. Check or replace it in Settings or "
                          "with `cairn key set`.", kind="key-rejected")
    setting = "model.knowledge" if purpose == "knowledge" else "model.chat"
    if isinstance(error, anthropic.PermissionDeniedError):
        return ModelError(f"This API key may not use {model}. Pick another model in Settings "
                          f"or with `cairn settings set {setting} MODEL`, or check the key's "
                          "permissions.", kind="permission")
    if isinstance(error, anthropic.NotFoundError):
        if catalog is not None:
            return ModelError(catalog.not_found(model, purpose), kind="model-not-found")
        return ModelError(f"The model '{model}' was not found. Pick another model in Settings "
                          f"or with `cairn settings set {setting} MODEL`.",
                          kind="model-not-found")
    if isinstance(error, anthropic.RateLimitError):
        return ModelError("Anthropic is rate-limiting this key right now, even after retrying. "
                          "Wait a minute and send again; your message is kept.", kind="rate-limited")
    if isinstance(error, anthropic.APIStatusError):
        body = error.body if isinstance(error.body, dict) else {}
        detail = body.get("error", body) if isinstance(body, dict) else {}
        error_type = detail.get("type", "") if isinstance(detail, dict) else ""
        message = str(detail.get("message", "")) if isinstance(detail, dict) else ""
        if error_type == "overloaded_error" or error.status_code == 529:
            return ModelError("Anthropic is overloaded right now, even after retrying. Try again "
                              "in a moment; your message is kept.", kind="overloaded")
        if error_type == "rate_limit_error":
            return explain(anthropic.RateLimitError(error.message, response=error.response,
                                                    body=error.body), model=model)
        if "prompt is too long" in message or "too long" in message and "context" in message:
            return ModelError("This conversation is now longer than the model can read. Start a "
                              "new chat (the workspace knowledge carries over).",
                              kind="prompt-too-long")
        if error.status_code >= 500 or error_type == "api_error":
            return ModelError("Anthropic had a problem answering, even after retrying. Try again "
                              "in a moment; your message is kept.", kind="server")
        return ModelError(f"Anthropic refused the request: {message or error_type or error.status_code}.",
                          kind="refused")
    if type(error).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore"):
        # Mid-stream, the transport's own errors surface instead of the SDK's.
        if "Timeout" in type(error).__name__:
            return ModelError("Anthropic stopped sending in the middle of the reply and took too "
                              "long to go on. What arrived is kept; send your message again.",
                              kind="timeout")
        return ModelError("The connection to Anthropic broke off mid-reply. What arrived is "
                          "kept; send your message again.", kind="network")
    return ModelError(f"The reply failed unexpectedly ({type(error).__name__}). Your message is "
                      "kept; send it again.", kind="unexpected")
