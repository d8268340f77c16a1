"""Links in a reply or a knowledge document: where they go is shown, and a link whose text
shows one address but opens another asks before opening.

A reply is model output (and a knowledge document may come from a bundle): ``[https://bank.example]
(https://evil.example)`` reads as one address and opens another.  The renderer marks such a
link with :data:`ASK` in front of its target; following it asks first, naming the target.
Only web links (http, https, mailto) ever reach the operating system.

A page a web search found (a reply's source, a citation's mark) opens only after the person
has seen its whole address: :func:`open_found` asks first, every time.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from PySide6.QtWidgets import QWidget

ASK = "cairn:ask:"  # in front of a link's target: its text shows another address
WEB_SCHEMES = ("http:", "https:", "mailto:")

_ADDRESS = re.compile(
    r"^(?:(?:https?|ftp)://|mailto:)?(?:[\w.+-]+@)?(?:www\.)?[\w-]+(?:\.[\w-]+)+\.?"
    r"(?::\d+)?(?:[/?#]\S*)?$", re.IGNORECASE)


def is_web(href: str) -> bool:
    return href.strip().lower().startswith(WEB_SCHEMES)


def target_of(href: str) -> str:
    """Where *href* goes (without the mark of a link that asks)."""
    return href[len(ASK):] if href.startswith(ASK) else href


def _host(address: str) -> str:
    """The host (or the mail address) *address* names, lower case, without ``www.``."""
    address = address.strip()
    if address.lower().startswith("mailto:"):
        return address[7:].split("?", 1)[0].lower()
    if "@" in address and "://" not in address and "/" not in address:
        return address.lower()  # a mail address as a link's text
    if "://" not in address:
        address = "http://" + address
    try:
        host = urlsplit(address).hostname or ""
    except ValueError:
        return ""
    host = host.rstrip(".")
    return host[4:] if host.startswith("www.") else host


def misleading(text: str, href: str) -> bool:
    """Whether a link showing *text* and opening *href* shows an address it does not open."""
    shown = text.strip()
    if not shown or " " in shown or not _ADDRESS.match(shown):
        return False  # words ("the docs"), not an address
    return _host(shown) != _host(href)


# What a mailto link may carry to the mail program (RFC 6068's fields people use): never
# ``attach=`` / ``attachment=``, which Evolution, KMail and others honour by attaching that
# file, so a link in a reply or a bundle's document could mail away the person's keys.
_MAIL_FIELDS = ("to", "cc", "bcc", "subject", "body", "in-reply-to")


def mail_link(target: str) -> str:
    """*target* (a mailto link) with only its address and the fields in :data:`_MAIL_FIELDS`."""
    address, _, query = target.partition("?")
    kept = [part for part in query.split("&")
            if part.split("=", 1)[0].strip().lower() in _MAIL_FIELDS]
    return address + ("?" + "&".join(kept) if kept else "")


def follow(href: str, parent: QWidget | None = None) -> bool:
    """Open a web link; one marked :data:`ASK` only after the person agrees.  Whether it
    was handed to the operating system."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QMessageBox

    from ui.text import confirm

    target = target_of(href)
    if not is_web(target):
        return False
    if href.startswith(ASK):
        if not confirm(QMessageBox.Icon.Warning, "Open this link?",
                       f"This link opens {target}, which is not the address its text shows.",
                       "Open", informative="Open it only if you trust where it goes.",
                       parent=parent):
            return False
    if target.strip().lower().startswith("mailto:"):
        target = mail_link(target.strip())
    return bool(QDesktopServices.openUrl(QUrl(target)))


def open_found(url: str, title: str = "", parent: QWidget | None = None) -> bool:
    """Open a page a web search found, after a small question showing its full address
    (it came from the web: the title may say anything).  Escape or Cancel leaves it closed.
    Whether it was handed to the operating system."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QMessageBox

    from ui.text import confirm

    if not url.lower().startswith(("http:", "https:")):
        return False
    about = f"“{title}” is at" if title else "This page is at"
    if not confirm(QMessageBox.Icon.Question, "Open this page?", f"{about}\n\n{url}",
                   "Open in browser", informative="It came from a web search: open it only "
                   "if the address is one you expect.", parent=parent):
        return False
    return bool(QDesktopServices.openUrl(QUrl(url)))
