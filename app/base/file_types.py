"""The ``.cairn`` bundle as each system knows file types, in one place: the Linux MIME type
(shared-mime-info), the macOS UTI (the app's Info.plist, written by packaging/cairn.spec), the
Windows ProgID (installer.iss names the same).  Without them a bundle reads as a zip file and
opens in an archive manager.

Pure data and pure functions: packaging/cairn.spec imports this module at build time, and the
tests read what each system is told.
"""

from __future__ import annotations

from typing import Any

EXTENSION = ".cairn"
MIME_TYPE = "application/x-cairn-bundle"  # x-: not registered with IANA
UTI = "app.cairn.bundle"  # under the app's bundle identifier, app.cairn.Cairn
WINDOWS_PROGID = "Cairn.Bundle"
DESCRIPTION = "Cairn workspace bundle"
APP_ID = "app.cairn.Cairn"  # the desktop entry's name (reverse DNS, as the spec asks), the icon's


def is_bundle(path: str) -> bool:
    """A path the window imports rather than opens as a folder: by its name, as the file
    manager decided (the import itself checks what the file holds)."""
    return path.lower().endswith(EXTENSION)


def shared_mime_info() -> str:
    """The MIME package for ``$XDG_DATA_HOME/mime/packages``: a ``.cairn`` file is a zip
    underneath (sub-class-of), so an archive manager stays on its Open With list."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="{MIME_TYPE}">
    <comment>{DESCRIPTION}</comment>
    <sub-class-of type="application/zip"/>
    <glob pattern="*{EXTENSION}" weight="60"/>
    <icon name="{APP_ID}"/>
  </mime-type>
</mime-info>
"""


def macos_exported_types() -> list[dict[str, Any]]:
    """Info.plist's ``UTExportedTypeDeclarations``: the UTI, declared by the app that owns it."""
    return [{
        "UTTypeIdentifier": UTI,
        "UTTypeDescription": DESCRIPTION,
        "UTTypeConformsTo": ["public.data", "public.zip-archive"],
        "UTTypeIconFile": "cairn.icns",
        "UTTypeTagSpecification": {"public.filename-extension": [EXTENSION[1:]],
                                   "public.mime-type": [MIME_TYPE]},
    }]


def macos_document_type() -> dict[str, Any]:
    """One ``CFBundleDocumentTypes`` entry: Cairn opens the UTI as its owner (Finder's
    double-click then sends a ``QFileOpenEvent``, handled as ``cairn FILE.cairn`` is)."""
    return {
        "CFBundleTypeName": DESCRIPTION,
        "CFBundleTypeRole": "Editor",  # imported, then kept as a workspace
        "LSHandlerRank": "Owner",
        "LSItemContentTypes": [UTI],
        "CFBundleTypeIconFile": "cairn.icns",
    }
