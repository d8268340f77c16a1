"""Model access: the Anthropic client, prices, and every failure as one sentence.

The key comes from :class:`app.store.settings.Settings` (keychain or ``ANTHROPIC_API_KEY``) and is
handed to the client only; it is never logged or stored here.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.errors import CairnError
from app.llm.catalog import Catalog, ModelInfo
from app.store.messages import Usage
from app.store.settings import Settings

if TYPE_CHECKING:
    # The SDK is imported where a call is made, never when Cairn opens: importing it costs
    # about half a second, and the window is filled in without it (the warm-up
    # imports it once the person is looking at the window).
    import anthropic

    # The SDK's types, named here so that layers above import them only for the type checker.
    Client = anthropic.AsyncAnthropic
    Reply = anthropic.types.Message

log = logging.getLogger(__name__)

# How long Cairn waits (seconds; read when a call is made, so tests can shorten them): for a
# connection, for the next bytes of an answer, for a whole answer, and for the wait a 429 or
# a 529 asks for before Cairn gives up instead of waiting (the SDK alone would wait hours).
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
DEADLINE = 600.0
LONGEST_RETRY_WAIT = 60.0
# How long a turn waits for its reply to begin, whatever the SDK retries meanwhile (a server
# that takes the connection and never answers: 3 tries of READ_TIMEOUT would be 3 minutes).
# With the models list's own bound (catalog.REFRESH_TIMEOUT) a person hears within 90 s;
# the waits a server asks for (a 429, a 529) are not silence and do not count.
ANSWER_DEADLINE = 75.0
# Waits before a round is sent again when its stream said ``overloaded_error`` before any of
# the reply arrived: a 529 in all but name (the SDK retries a 529, never a stream's error).
OVERLOADED_STREAM_WAITS = (1.0, 3.0)
OVERLOADED_AFTER_RETRYING = ("Anthropic is overloaded right now, even after retrying. Try again "
                             "in a moment; your message is kept.")  # overloaded_after_retrying()

# Who hears that a call waits before trying again: set by the caller around one call (a
# context variable, so each call's listener travels with its own task).
RetryListener = Callable[[float, str], None]  # (seconds, why: rate-limited | overloaded | …)
retry_listener: contextvars.ContextVar[RetryListener | None] = contextvars.ContextVar(
    "retry_listener", default=None)


# Where a person checks the address Cairn talks to, in every sentence that sends them there.
BASE_URL = "the base URL, in Settings or with `cairn settings show`"
WEB_PAGE = ("The server answered with a web page instead of a reply — a Wi-Fi login page, or a "
            "base URL that is not an Anthropic API? Open any web page to sign in, or check "
            f"{BASE_URL}. Your message is kept.")


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
        web_searches=getattr(getattr(raw, "server_tool_use", None), "web_search_requests", 0)
        or 0,
    )


def make_client(settings: Settings, *, key: str | None = None, base_url: str | None = None,
                plain_http: bool = False) -> anthropic.AsyncAnthropic:
    """The client for the stored key and base URL, or for *key* and *base_url* when given
    (Settings' Test tries what was typed, storing nothing).

    Refused before any key is sent when the base URL is plain http to another machine the
    person has not agreed to (``api.plain_http``; *plain_http*: they just did, in a question
    Settings asked): the client is the only way a key leaves Cairn."""
    url = settings.base_url() if base_url is None else base_url or None
    refusal = None if plain_http else settings.plain_http_refusal(url)
    if refusal is not None:
        raise ModelError(refusal, kind="plain-http")
    key = key or settings.api_key()
    if not key:
        from app.store.settings import no_key_sentence

        raise ModelError(no_key_sentence(settings.keychain_problem, settings.key_owner()),
                         kind="no-key")
    # The SDK retries 429, 5xx and connection errors with backoff; we never loop on top.
    return client_class()(api_key=key, base_url=url, max_retries=2, timeout=timeouts())


def timeouts(read: float | None = None) -> anthropic.Timeout:
    """Seconds to connect, and between two pieces of an answer (*read*, else READ_TIMEOUT)."""
    import anthropic

    return anthropic.Timeout(READ_TIMEOUT if read is None else read, connect=CONNECT_TIMEOUT)


@functools.cache
def client_class() -> type[anthropic.AsyncAnthropic]:
    """:class:`CairnClient`, made on first use (it subclasses the SDK's client)."""
    import anthropic

    class CairnClient(anthropic.AsyncAnthropic):
        """The SDK's client with two limits of Cairn's on its retries: a wait the server asks for
        that is longer than LONGEST_RETRY_WAIT is not waited (the call fails at once and says how
        long the server asked for), and every wait is told to the call's :data:`retry_listener`
        (the window counts it down, the command line prints it; Stop ends it).

        These hook the SDK's retry policy (``_should_retry``, ``_sleep_for_retry``); the
        misbehaving-server tests run through the real SDK, so a change there shows in CI."""

        async def _prepare_options(self, options: Any) -> Any:
            # No redirect is followed (the SDK follows them): a server that answers one would
            # send the chat on to an address the person never chose, plain http to another
            # machine included, past the agreement that address needs (api.plain_http).
            # Anthropic's API never redirects; a 3xx is said as the server's answer.
            options = await super()._prepare_options(options)
            options.follow_redirects = False
            return options

        def _should_retry(self, response: Any) -> bool:
            wait = self._parse_retry_after_header(response.headers)
            if wait is not None and wait > LONGEST_RETRY_WAIT:
                return False
            return super()._should_retry(response)

        def _calculate_retry_timeout(self, remaining_retries: int, options: Any,
                                     response_headers: Any | None = None) -> float:
            return min(super()._calculate_retry_timeout(remaining_retries, options, response_headers),
                       LONGEST_RETRY_WAIT)

        async def _sleep_for_retry(self, *, retries_taken: int, max_retries: int, options: Any,
                                   response: Any | None) -> None:
            listener = retry_listener.get()
            if listener is not None:
                wait = self._calculate_retry_timeout(max_retries - retries_taken, options,
                                                     response.headers if response else None)
                status = response.status_code if response is not None else 0
                why = ("rate-limited" if status == 429 else "overloaded" if status == 529
                       else "server" if status >= 500 else "network")
                try:
                    listener(wait, why)
                except Exception:
                    log.exception("a retry listener failed")
            await super()._sleep_for_retry(retries_taken=retries_taken, max_retries=max_retries,
                                           options=options, response=response)

    return CairnClient


def seconds(value: float) -> str:
    """A wait in words: "20 seconds", "1.5 seconds", "10 minutes"."""
    if value >= 120 and value % 60 == 0:
        return f"{int(value // 60)} minutes"
    amount = f"{value:g}" if value < 10 else f"{round(value)}"
    return f"{amount} second{'' if amount == '1' else 's'}"


def server_named(base_url: Any) -> str:
    """Who answered, in a sentence: "Anthropic" for Anthropic's own API (no base URL, or
    https://api.anthropic.com), else "the server at HOST[:PORT][/PATH]" — a proxy's refusal
    is never put in Anthropic's mouth (issue 39).  *base_url* may be an ``httpx.URL``."""
    from app.store.settings import key_owner

    return key_owner(str(base_url) if base_url is not None else None)


def _capital(who: str) -> str:
    return who[:1].upper() + who[1:]


def _server_of(error: BaseException) -> str:
    """The server a failed call went to, from the request the error carries: its scheme,
    host and port (the path is the endpoint's, not the base URL's)."""
    try:
        url = error.request.url  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # an httpx error without its request
        return "the server"
    host = str(getattr(url, "host", "") or "")
    if not host:
        return "the server"
    if ":" in host:
        host = f"[{host}]"
    port = getattr(url, "port", None)
    return server_named(f"{url.scheme}://{host}{f':{port}' if port else ''}")


def overloaded_after_retrying(who: str = "Anthropic") -> str:
    return (f"{_capital(who)} is overloaded right now, even after retrying. Try again in a "
            "moment; your message is kept.")


# A proxy's wrapping of the API's own refusal: LiteLLM's "litellm.BadRequestError:
# AnthropicException - {"type":"error","error":{"type":"…","message":"…"}}. Received …".
_WRAPPED = re.compile(r'"message"\s*:\s*("(?:[^"\\]|\\.)*")')
_WRAPPER = re.compile(r"^litellm\.\w+:\s*(?:\w+Exception\s*-\s*)?")
# LiteLLM's answers to a key it does not know: without a database of keys, "No connected
# db."; with one, "Authentication Error, …".
_PROXY_KEY_REFUSALS = ("no connected db", "authentication error", "invalid proxy server token",
                       "no_db_connection", "auth_error", "invalid api key", "api key not valid")


def is_proxy_key_refusal(error: BaseException) -> bool:
    """A proxy's answer to a key it does not know, in its own words (LiteLLM's 400 "No
    connected db." among them)."""
    status = getattr(error, "status_code", None)
    if status not in (400, 401, 403):
        return False
    error_type, message = refusal_of(error)
    return any(word in f"{error_type} {message}".casefold() for word in _PROXY_KEY_REFUSALS)


def refusal_of(error: BaseException) -> tuple[str, str]:
    """The refusal's type and message, as the API wrote them, unwrapped from a proxy's
    wrapping when it holds the API's own JSON (the message first: it says what to mend)."""
    body = getattr(error, "body", None)
    detail = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(detail, str):  # {"error": "No connected db."}
        return "", detail
    if not isinstance(detail, dict):
        return "", ""
    error_type = str(detail.get("type") or "")
    message = str(detail.get("message") or "")
    inner = _WRAPPED.search(message)
    if inner is not None:
        import json

        try:
            return error_type, str(json.loads(inner.group(1)))
        except ValueError:
            pass
    return error_type, _WRAPPER.sub("", message).strip()


def explain(error: BaseException, *, model: str, catalog: Catalog | None = None,
            purpose: str = "chat", server: str | None = None) -> ModelError:
    """One sentence a person understands, for every way a call can fail, naming the server
    that failed (*server*, else the one the error's request went to).  A knowledge
    update's says nothing of a message: none of the person's is involved in it."""
    who = server or _server_of(error)
    explained = _explain(error, model=model, catalog=catalog, purpose=purpose, who=who)
    if purpose == "chat":
        return explained
    sentence = str(explained)
    for said, instead in _NO_MESSAGE:
        sentence = said.sub(instead, sentence)
    return ModelError(sentence, kind=explained.kind)


# What a chat's failure says of the person's message, and what a knowledge update's says.
_NO_MESSAGE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[.;] [Yy]our message is kept; send it again(?: in a moment)?\."),
     ". Try again in a moment."),
    (re.compile(r"\. What arrived is kept; send your message again\."), ". Nothing was changed."),
    (re.compile(r"[.;] [Yy]our message is kept\."), "."),
    (re.compile(r"\bsend again\b"), "try again"),
    (re.compile(r"\bSend again\b"), "Try again"),
)


def _explain(error: BaseException, *, model: str, catalog: Catalog | None,
             purpose: str, who: str) -> ModelError:
    if isinstance(error, ModelError):
        return error
    if isinstance(error, CairnError):  # refused before any call (a retired model, say)
        return ModelError(str(error), kind="refused")
    import anthropic  # (already imported: a call was made)

    Who = _capital(who)
    if isinstance(error, anthropic.APITimeoutError):
        if "Connect" in type(error.__cause__).__name__:
            return ModelError(f"Cairn could not connect to {who} within "
                              f"{seconds(CONNECT_TIMEOUT)}. Check your internet connection (or "
                              f"{BASE_URL}); your message is kept.", kind="timeout")
        return ModelError(f"{Who} did not answer within {seconds(READ_TIMEOUT)}, even after "
                          "trying again. Your message is kept; send it again in a moment.",
                          kind="timeout")
    if isinstance(error, anthropic.APIResponseValidationError):
        return ModelError(f"The server's answer is not a reply Cairn can read (not the shape of "
                          f"Anthropic's API; check {BASE_URL}). Your message is kept.",
                          kind="garbled")
    if isinstance(error, anthropic.APIConnectionError):
        check = ("Check your internet connection (or the base URL" if who == "Anthropic" else
                 "Check that it is running (and the base URL")
        return ModelError(f"Cannot reach {who}. {check}, in Settings or with `cairn settings "
                          "show`); your message is kept.", kind="network")
    kept = "; your message is kept" if purpose == "chat" else ""
    if isinstance(error, anthropic.AuthenticationError):
        return ModelError(f"{Who} rejected the API key. Check or replace it in Settings or "
                          f"with `cairn key set`{kept}.", kind="key-rejected")
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
        wait = _asked_wait(error)
        if wait is not None and wait > LONGEST_RETRY_WAIT:
            return ModelError(f"{Who} is rate-limiting this key and asks to wait "
                              f"{seconds(round(wait))} before the next request. Send again "
                              "after that; your message is kept.", kind="rate-limited")
        return ModelError(f"{Who} is rate-limiting this key right now, even after retrying. "
                          "Wait a minute and send again; your message is kept.", kind="rate-limited")
    if isinstance(error, anthropic.APIStatusError):
        if isinstance(error.body, str) and error.body.lstrip()[:15].lower().startswith(
                ("<!doctype html", "<html")):
            return ModelError(WEB_PAGE, kind="web-page")
        error_type, message = refusal_of(error)
        if error.status_code == 200:  # an error event in the middle of a stream: not retried
            what = ("became overloaded" if error_type == "overloaded_error"
                    else "had a problem")
            return ModelError(f"{Who} {what} in the middle of the reply. What arrived is "
                              "kept; send your message again.", kind="server")
        if error_type == "overloaded_error" or error.status_code == 529:
            return ModelError(overloaded_after_retrying(who), kind="overloaded")
        if error_type == "rate_limit_error":
            return _explain(anthropic.RateLimitError(error.message, response=error.response,
                                                     body=error.body), model=model,
                            catalog=catalog, purpose=purpose, who=who)
        if is_proxy_key_refusal(error):
            # LiteLLM's proxy answers a key it does not know with a 400 ("No connected db.")
            said = (message or error_type).strip().rstrip(".")
            return ModelError(f"{Who} did not accept the API key (it says \u201c{said}.\u201d). "
                              "Check or replace the key for this server in Settings or with "
                              f"`cairn key set`{kept}.", kind="key-rejected")
        if "prompt is too long" in message or "too long" in message and "context" in message:
            return ModelError("This conversation is now longer than the model can read. Start a "
                              "new chat (the workspace knowledge carries over).",
                              kind="prompt-too-long")
        if error.status_code >= 500 or error_type == "api_error":
            return ModelError(f"{Who} had a problem answering, even after retrying. Try again "
                              "in a moment; your message is kept.", kind="server")
        said = (message or error_type or str(error.status_code)).strip().rstrip(".")
        return ModelError(f"{Who} refused the request: {said}.",
                          kind="refused")
    if type(error).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore"):
        # Mid-stream, the transport's own errors surface instead of the SDK's.
        if "Timeout" in type(error).__name__:
            return ModelError(f"{Who} stopped sending in the middle of the reply (nothing "
                              f"came for {seconds(READ_TIMEOUT)}). What arrived is kept; send "
                              "your message again.", kind="timeout")
        return ModelError(f"The connection to {who} broke off mid-reply. What arrived is "
                          "kept; send your message again.", kind="network")
    log.warning("an unexpected failure of a model call: %r", error)
    return ModelError("The reply failed on a problem Cairn did not expect (the log has the "
                      "details). Your message is kept; send it again.", kind="unexpected")


def no_answer(who: str = "Anthropic") -> ModelError:
    """A server took the connection and sent nothing of a reply within ANSWER_DEADLINE."""
    return ModelError(f"{_capital(who)} did not answer within {seconds(ANSWER_DEADLINE)}: the "
                      "connection was made, but no reply began, even after trying again. Your "
                      "message is kept; send it again in a moment.", kind="timeout")


def overloaded_in_stream(error: BaseException) -> bool:
    """The stream's own ``error`` event said ``overloaded_error`` (an HTTP 200 whose stream
    broke off): worth sending again when nothing of the reply was shown yet."""
    import anthropic  # (already imported: a call was made)

    if not isinstance(error, anthropic.APIStatusError) or error.status_code != 200:
        return False
    body = error.body if isinstance(error.body, dict) else {}
    detail = body.get("error", body)
    return isinstance(detail, dict) and detail.get("type") == "overloaded_error"


def _asked_wait(error: anthropic.APIStatusError) -> float | None:
    """How long a refusal asks the caller to wait (``retry-after``), in seconds."""
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(headers.get(name, "")) / scale
        except (TypeError, ValueError):
            continue
    return None
