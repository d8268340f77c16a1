"""Desktop integration: the Linux desktop entry, icon and MIME type that
`cairn install-desktop` writes under $XDG_DATA_HOME, the macOS UTI of the app's Info.plist, the
Windows file association of installer.iss, all naming the same .cairn type."""

from __future__ import annotations

import configparser
import json
import plistlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app import cli
from app.base import desktop_entry, file_types
from app.base.desktop_entry import desktop_entry as entry_text
from app.base.desktop_entry import install

ROOT = Path(__file__).resolve().parents[3]


def read_entry(text: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(text)
    return dict(parser["Desktop Entry"])


def test_the_desktop_entry_starts_cairn_with_the_file_and_claims_the_bundle_type():
    entry = read_entry(entry_text(["/opt/Cairn/Cairn"]))
    assert entry["Type"] == "Application" and entry["Name"] == "Cairn"
    assert entry["Exec"] == "/opt/Cairn/Cairn %u"
    assert entry["MimeType"] == "application/x-cairn-bundle;x-scheme-handler/cairn;"
    assert entry["Icon"] == "app.cairn.Cairn" and entry["Terminal"] == "false"


def test_an_exec_word_with_spaces_quotes_or_dollars_is_quoted_by_the_spec():
    entry = read_entry(entry_text(["/home/a b/.venv/bin/python", "-m", "ui.main"]))
    assert entry["Exec"] == '"/home/a b/.venv/bin/python" -m ui.main %u'
    entry = read_entry(entry_text(['/x/$HOME "q"/c\\d']))
    # quoted: $ " and \ get a backslash; then each backslash doubled for the string value
    assert entry["Exec"] == '"/x/\\\\$HOME \\\\"q\\\\"/c\\\\\\\\d" %u'


def test_the_mime_package_globs_cairn_files_as_a_kind_of_zip():
    root = ET.fromstring(file_types.shared_mime_info())
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    (kind,) = root.findall("m:mime-type", ns)
    assert kind.get("type") == file_types.MIME_TYPE
    assert kind.find("m:glob", ns).get("pattern") == "*.cairn"
    assert kind.find("m:sub-class-of", ns).get("type") == "application/zip"


def test_install_writes_under_xdg_data_home_and_runs_only_the_tools_present(tmp_path):
    home = tmp_path / "share"
    ran: list[list[str]] = []
    present = {"update-mime-database": "/usr/bin/update-mime-database"}
    done = install(home, ["/opt/Cairn/Cairn"], which=present.get, run=ran.append)
    desktop = home / "applications" / "app.cairn.Cairn.desktop"
    assert read_entry(desktop.read_text())["Exec"] == "/opt/Cairn/Cairn %u"
    assert (home / "mime" / "packages" / "app.cairn.Cairn.xml").read_text() == \
        file_types.shared_mime_info()
    svg = home / "icons" / "hicolor" / "scalable" / "apps" / "app.cairn.Cairn.svg"
    assert svg.read_bytes() == (ROOT / "resources" / "icons" / "cairn.svg").read_bytes()
    assert (home / "icons" / "hicolor" / "256x256" / "apps" / "app.cairn.Cairn.png").exists()
    assert ran == [["/usr/bin/update-mime-database", str(home / "mime")]]
    assert done.missing == ["update-desktop-database", "xdg-mime"]
    assert not list(home.rglob(".*.partial"))
    # Every tool present: the desktop database, and the bundle type given to Cairn.
    ran.clear()
    install(home, ["/opt/Cairn/Cairn"], which=lambda name: f"/bin/{name}", run=ran.append)
    assert ["/bin/xdg-mime", "default", "app.cairn.Cairn.desktop",
            "application/x-cairn-bundle"] in ran
    assert ["/bin/update-desktop-database", str(home / "applications")] in ran


def test_cairn_install_desktop_uses_xdg_data_home_and_opens_no_data_folder(
        isolated, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # none of the desktop's tools
    assert cli.main(["install-desktop", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert str(tmp_path / "xdg" / "applications" / "app.cairn.Cairn.desktop") in done["files"]
    assert done["ran"] == [] and "xdg-mime" in done["missing"]
    assert not (isolated / "cairn.db").exists()


def test_a_relative_xdg_data_home_is_ignored_as_the_spec_says(tmp_path):
    assert desktop_entry.data_home({"XDG_DATA_HOME": "rel/dir", "HOME": str(tmp_path)}) == \
        tmp_path / ".local" / "share"
    assert desktop_entry.data_home({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path


def test_install_desktop_on_macos_or_windows_is_one_sentence(isolated, monkeypatch, capsys):
    monkeypatch.setattr("sys.platform", "darwin")
    assert cli.main(["install-desktop"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "for Linux desktops" in err


def test_the_macos_plist_declares_the_uti_and_cairn_owns_it():
    exported = file_types.macos_exported_types()
    document = file_types.macos_document_type()
    plistlib.dumps({"UTExportedTypeDeclarations": exported,  # valid plist values
                    "CFBundleDocumentTypes": [document]})
    (uti,) = exported
    assert uti["UTTypeIdentifier"] == "app.cairn.bundle" == document["LSItemContentTypes"][0]
    assert uti["UTTypeTagSpecification"]["public.filename-extension"] == ["cairn"]
    assert "public.zip-archive" in uti["UTTypeConformsTo"]
    assert document["LSHandlerRank"] == "Owner"
    spec = (ROOT / "packaging" / "cairn.spec").read_text()
    assert re.search(r"\}, macos_document_type\(\)\],", spec)  # beside the folder entry
    assert '"UTExportedTypeDeclarations": macos_exported_types(),' in spec


def test_the_windows_installer_associates_cairn_files_with_cairn_open():
    iss = (ROOT / "installer.iss").read_text()
    lines = [line for line in iss.splitlines() if line.startswith("Root: HKA;")]

    def value(subkey: str, name: str = "") -> str:
        for line in lines:
            fields = dict(re.findall(r'(\w+): ("(?:[^"]|"")*"|[^;]*)', line))
            if fields.get("Subkey") == f'"{subkey}"' and fields.get("ValueName") == f'"{name}"':
                return fields["ValueData"][1:-1].replace('""', '"')  # Inno's quoting undone
        raise AssertionError(f"no value {subkey!r} {name!r} in installer.iss")

    progid = file_types.WINDOWS_PROGID
    assert value("Software\\Classes\\.cairn") == progid
    assert value("Software\\Classes\\.cairn", "Content Type") == file_types.MIME_TYPE
    assert value(f"Software\\Classes\\{progid}\\shell\\open\\command") == \
        '"{app}\\Cairn.exe" open "%1"'
    assert "\nChangesAssociations=yes\n" in iss


@pytest.mark.parametrize("path, bundle", [("a/b.cairn", True), ("X.CAIRN", True),
                                          ("a/cairn", False), ("a.cairn.zip", False)])
def test_a_bundle_is_known_by_its_name(path, bundle):
    assert file_types.is_bundle(path) is bundle
