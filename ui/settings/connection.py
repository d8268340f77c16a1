"""Settings → Connection: the API key (kept per server in the system keychain), Test and
Forget, and the base URL with its plain-http warning.  The page shows; the dialog saves."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QLineEdit

from app.store.settings import Settings, plain_http_host, plain_http_warning
from ui.settings.form import Form, Page, button, note, spacer


def keychain_problem() -> str | None:
    """Why the system keychain cannot keep a key (its backend is keyring's fail or null
    backend, or cannot be loaded), or None.  On the writer thread: loading it is slow."""
    from app.store.settings import unusable_keychain  # one rule, with the chat's sentence

    return unusable_keychain()


def failure_sentence(error: BaseException | None, server: str) -> str:
    """One sentence for a models list that did not come.  Told apart by the SDK's error
    classes' names and status, so the window never imports the SDK itself."""
    kinds = {cls.__name__ for cls in type(error).__mro__} if error is not None else set()
    status = getattr(error, "status_code", None)
    from app.llm.client import is_proxy_key_refusal, refusal_of

    if status == 401 or "AuthenticationError" in kinds:
        return "The server rejected this key (401): check it, or paste a new one and Save."
    if error is not None and is_proxy_key_refusal(error):  # LiteLLM's 400 "No connected db."
        kind, message = refusal_of(error)
        said = (message or kind)[:120].strip().rstrip(".")
        return (f"The server did not accept this key (it says “{said}.”): check it, or paste "
                "a new one and Save.")
    if status == 403 or "PermissionDeniedError" in kinds:
        return "The server knows this key but may not list models with it (403)."
    if "APITimeoutError" in kinds:
        return f"{server} took too long to answer; check the base URL, or try again."
    if "APIConnectionError" in kinds:
        if "api.anthropic.com" in server:
            return f"Cannot reach {server}; check your internet connection and the base URL."
        return f"Cannot reach {server}; check that it is running, and the base URL."
    if isinstance(status, int):
        return (f"{server} answered with an error (HTTP {status}) instead of the models "
                "list.")
    return f"The models list could not be fetched from {server}."


class ConnectionPage(Page):
    """The key's field and its state, Test and Forget (their slots are the dialog's), and
    the declared settings of the ``connection`` page (the base URL)."""

    name = "connection"

    def __init__(self, settings: Settings, *, test: Callable[[], None],
                 forget: Callable[[], None]) -> None:
        super().__init__()
        self._settings = settings
        self.key = QLineEdit()
        self.key.setAccessibleName("API key")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("Checking the keychain…")
        self.forget = button("Forget", "Forget API key", forget)
        self.forget.setToolTip("Remove the key from the system keychain")
        self.test_button = button("Test", "Test", test)
        self.test_button.setToolTip("Fetch the models list with this key (a new key and base "
                                    "URL are saved first)")
        key_row = QHBoxLayout()
        key_row.setSpacing(8)
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.test_button)
        key_row.addWidget(self.forget)
        self.key_state = note("API key status")
        self.key_server = note("API key server", muted=True)  # whose key: one per server
        self.test_result = note("Test result")
        self.test_result.hide()

        base_url = self.field("api.base_url")
        assert isinstance(base_url, QLineEdit)
        self.base_url = base_url
        self.base_url.setPlaceholderText("Anthropic (https://api.anthropic.com)")
        from_env = os.environ.get("ANTHROPIC_BASE_URL", "").strip()
        url_hint = note("Base URL help", muted=True, text=(
            "Leave empty for Anthropic" + (f" (ANTHROPIC_BASE_URL is set: {from_env})"
                                           if from_env else "")
            + ". For an Anthropic-compatible server, enter its address: LiteLLM's proxy "
            "http://localhost:4000, Ollama http://localhost:11434, llama.cpp "
            "http://localhost:8080."))

        form = Form()
        form.addRow("API key", key_row)
        form.addRow("", self.key_state)
        form.addRow("", self.key_server)
        form.addRow("", self.test_result)
        form.addRow(spacer(14))
        # Plain http to another machine: said while it is typed, and asked before the key goes.
        self.url_warning = note("Base URL warning")
        self.url_warning.setStyleSheet("color: #dc2626;")
        self.base_url.textChanged.connect(self.warn_of_plain_http)
        form.addRow("Base URL", self.base_url)
        form.addRow("", self.url_warning)
        form.addRow("", url_hint)
        self.add_the_rest(form)
        form.into(self)
        self.warn_of_plain_http()

    def typed_url(self) -> str:
        """The base URL the field means: what it holds, else ANTHROPIC_BASE_URL's."""
        return self.base_url.text().strip() or os.environ.get("ANTHROPIC_BASE_URL", "").strip()

    def warn_of_plain_http(self) -> None:
        url = self.typed_url()
        plain = plain_http_host(url) is not None
        if plain:
            allowed = self._settings.plain_http_refusal(url) is None
            self.url_warning.setText(plain_http_warning(url) + (
                " You allowed it." if allowed else
                " Cairn asks before it sends your key there."))
        self.url_warning.setVisible(plain)

    def show_key_state(self, *, has_key: bool, problem: str | None) -> None:
        from_env = bool(os.environ.get("ANTHROPIC_API_KEY", "").strip())
        if from_env:
            text = ("ANTHROPIC_API_KEY is set in the environment: Cairn uses it, and it "
                    "overrides any key saved here.")
            placeholder = "Using ANTHROPIC_API_KEY"
        elif problem:
            also = (", or install and unlock GNOME Keyring or KWallet"
                    if sys.platform.startswith("linux") else "")
            text = (f"Cairn cannot keep a key here: {problem.rstrip('.')}. Set "
                    f"ANTHROPIC_API_KEY in your environment instead{also}.")
            placeholder = "No keychain: set ANTHROPIC_API_KEY"
        elif has_key:
            # (the field is narrow: what to do goes in the sentence under it)
            text = "A key is saved in your system keychain. Paste a new one to replace it."
            placeholder = "•••••••• saved"
        else:
            owner = self._settings.key_owner()
            whose = ("your Anthropic API key" if owner == "Anthropic"
                     else f"the API key for {owner}")
            text = (f"No key yet. Paste {whose}; Cairn keeps it in your system "
                    "keychain, never in a file.")
            placeholder = "sk-ant-…" if owner == "Anthropic" else "API key"
        self.key_state.setText(text)
        self.key.setPlaceholderText(placeholder)
        self.key.setEnabled(problem is None)
        self.forget.setEnabled(has_key and not from_env and problem is None)
        self.show_key_server()

    def show_key_server(self) -> None:
        """Which server the key field is for: each base URL keeps its own key."""
        owner = self._settings.key_owner()
        self.key_server.setText(f"The key here is for {owner}, the saved base URL: each "
                                "server keeps its own key.")
