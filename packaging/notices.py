"""The third-party notices shipped in the bundle: one text file, written by cairn.spec at build time.

It covers what the bundle really holds: the distributions whose modules PyInstaller collected
(found from the collected module names), Python itself, PyInstaller's bootloader, and Qt. Each
gets its name, version, licence and the full text of the licence files it ships; PySide6 and
shiboken6 ship none, so the LGPL-3.0 and the GPL-3.0 it builds on come from packaging/licenses/.

Run inside the build environment (it reads that environment's installed metadata):

    uv run --no-sync python packaging/notices.py OUT.txt MODULE...   # by hand, for a look
"""

from __future__ import annotations

import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
LICENSE_NAME = re.compile(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", re.IGNORECASE)
# Distributions that ship no licence file of their own: the text their licence names.
FALLBACK_TEXTS = {
    "pyside6-essentials": ["LGPL-3.0.txt", "GPL-3.0.txt"],
    "shiboken6": ["LGPL-3.0.txt", "GPL-3.0.txt"],
}
QT_NOTE = """\
Qt 6 and PySide6 (Qt for Python) are (c) The Qt Company Ltd and other contributors, used under
the GNU Lesser General Public License version 3 (LGPL-3.0), whose text and that of the GNU GPL
version 3 it builds on follow below. Cairn links to Qt dynamically: the Qt libraries are
separate files in this bundle (PySide6/Qt) and may be replaced by a compatible build of your
own. The source code of Qt and of PySide6 is at https://download.qt.io/official_releases/qt/
and https://code.qt.io/cgit/pyside/pyside-setup.git/ (tag v{version}); Qt's own third-party
components are listed at https://doc.qt.io/qt-6/licenses-used-in-qt.html.
"""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions_for(modules: list[str]) -> list[metadata.Distribution]:
    """The installed distributions that provide these top-level module names, by name."""
    providers = metadata.packages_distributions()
    names = {_normal(dist) for top in modules for dist in providers.get(top, [])}
    names.discard("cairn")  # ours
    found = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        if name in names:
            found[name] = dist
    return [found[name] for name in sorted(found)]


def _licence_label(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    if meta.get("License-Expression"):
        return meta["License-Expression"]
    licence = (meta.get("License") or "").strip()
    if licence and "\n" not in licence and len(licence) < 120:
        return licence
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    return ", ".join(classifiers) or "see the licence text below"


def _licence_texts(dist: metadata.Distribution) -> list[tuple[str, str]]:
    texts = []
    for file in dist.files or []:
        parts = file.parts
        in_metadata = parts[0].endswith((".dist-info", ".egg-info"))
        if in_metadata and LICENSE_NAME.search(file.name) and "sboms" not in parts:
            text = Path(file.locate()).read_text(encoding="utf-8", errors="replace")
            texts.append((file.name, text))
    if not texts:
        for name in FALLBACK_TEXTS.get(_normal(dist.metadata["Name"]), []):
            texts.append((name, (HERE / "licenses" / name).read_text(encoding="utf-8")))
    return texts


def _python_licence() -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for candidate in (stdlib / "LICENSE.txt", Path(sys.base_prefix) / "LICENSE.txt",
                      Path(sys.base_prefix) / "share" / "doc" / "python3" / "copyright"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8", errors="replace")
    raise SystemExit("notices: cannot find the LICENSE.txt of the Python being bundled")


def _section(title: str, licence: str, texts: list[tuple[str, str]]) -> str:
    rule = "=" * 78
    out = [rule, title, f"Licence: {licence}", rule, ""]
    for name, text in texts:
        out += [f"--- {name} ---", "", text.strip(), ""]
    return "\n".join(out) + "\n"


def write_notices(out: Path, modules: list[str]) -> list[str]:
    """Write the notices file; return the distributions it covers (for the build log)."""
    dists = distributions_for(modules)
    version = sys.version.split()[0]
    parts = [
        "Cairn — third-party software notices\n\n"
        "Cairn ships the following software. Each is used under the licence named here, whose\n"
        "full text follows it.\n\n",
        _section(f"Python {version}", "PSF-2.0 (Python Software Foundation License), with the "
                 "licences of the libraries Python includes", [("LICENSE.txt", _python_licence())]),
    ]
    for dist in dists:
        name, dist_version = dist.metadata["Name"], dist.version
        texts = _licence_texts(dist)
        if _normal(name) == "pyside6-essentials":
            texts = [("about Qt", QT_NOTE.format(version=dist_version))] + texts
        if not texts:
            raise SystemExit(f"notices: {name} {dist_version} ships no licence text: add one "
                             "to packaging/licenses/ and FALLBACK_TEXTS")
        parts.append(_section(f"{name} {dist_version}", _licence_label(dist), texts))
    try:  # the bootloader that starts the app is PyInstaller's: GPL-2.0 with an exception for it
        pyinstaller = metadata.distribution("pyinstaller")
        parts.append(_section(f"PyInstaller bootloader {pyinstaller.version}",
                              _licence_label(pyinstaller), _licence_texts(pyinstaller)))
    except metadata.PackageNotFoundError:
        pass
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts), encoding="utf-8")
    return [f"{d.metadata['Name']} {d.version}" for d in dists]


if __name__ == "__main__":
    covered = write_notices(Path(sys.argv[1]), sys.argv[2:])
    print("\n".join(covered))
