"""Folder rules (spec 004 "Which folders can become a workspace", DESIGN.md section 4)."""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.base import paths
from app.base.paths import (
    Folder,
    folder_status,
    identity,
    is_fully_qualified,
    is_fully_qualified_posix,
    is_fully_qualified_windows,
    parent_keys,
    path_key,
    resolve_folder,
    shown,
    title_for,
    try_resolve_folder,
)
from app.errors import Refused

posix_only = pytest.mark.skipif(os.name == "nt", reason="uses POSIX paths on this machine")

GUID = "Volume{b75e2c83-0000-0000-0000-602f00000000}"
WINDOWS_QUALIFIED = [
    "C:\\", "C:/", "c:\\work\\x", "Z:/a/b", "\\\\server\\share", "\\\\server\\share\\",
    "\\\\server\\share\\dir", "//server/share", "//server/share/dir", "\\\\?\\C:\\x", "\\\\?\\C:\\",
    "\\\\.\\C:\\x", "\\\\?\\UNC\\server\\share", "\\\\?\\unc\\server\\share\\d", "//?/C:/x",
    f"\\\\?\\{GUID}\\", f"\\\\?\\{GUID}\\dir",
]  # fmt: skip
WINDOWS_REFUSED = [
    "", "\0", "C:\\\0", "C:\\a\0b", ".", "work", "..\\x", "\\work", "/work", "C:", "c:", "C:work",
    "C:..", "\\\\server", "\\\\server\\", "//server", "//server/", "\\\\", "//", "\\", "\\\\?\\",
    "\\\\?\\C:", "\\\\?\\C:x", "\\\\?\\UNC\\server", "\\\\?\\UNC\\server\\", "\\\\?\\UNC",
    "\\\\?\\Volume{}\\", f"\\\\?\\{GUID}", "\\\\.\\pipe\\x", "\\\\?", "1:\\x", "CC:\\x", " C:\\",
]  # fmt: skip
POSIX_QUALIFIED = ["/", "//", "//x", "/a/b/", "/C:\\", "/.."]
POSIX_REFUSED = [
    "",
    "\0",
    "/\0",
    "/a\0b",
    ".",
    "..",
    "work",
    "./x",
    "C:\\",
    "C:/x",
    "\\\\server\\share",
    "~",
]

NOT_QUALIFIED = re.compile(r"Workspace path is not fully qualified: '[^\n]*'")
CANNOT_CREATE = re.compile(
    r"cannot create a workspace at '[^\n]*': "
    r"(path does not exist|path is not a directory|[a-z][^\n]*)"
)


def assert_documented(message: str) -> None:
    assert message.splitlines() == [message], message
    assert NOT_QUALIFIED.fullmatch(message) or CANNOT_CREATE.fullmatch(message), message


# ---------------------------------------------------------------- pure rules, both systems


@pytest.mark.parametrize("path", WINDOWS_QUALIFIED)
def test_windows_accepts(path: str) -> None:
    assert is_fully_qualified_windows(path)
    assert is_fully_qualified(path, windows=True)


@pytest.mark.parametrize("path", WINDOWS_REFUSED)
def test_windows_refuses(path: str) -> None:
    assert not is_fully_qualified_windows(path)
    assert not is_fully_qualified(path, windows=True)


@pytest.mark.parametrize("path", POSIX_QUALIFIED)
def test_posix_accepts(path: str) -> None:
    assert is_fully_qualified_posix(path)
    assert is_fully_qualified(path, windows=False)


@pytest.mark.parametrize("path", POSIX_REFUSED)
def test_posix_refuses(path: str) -> None:
    assert not is_fully_qualified_posix(path)
    assert not is_fully_qualified(path, windows=False)


def test_default_rules_are_this_machines() -> None:
    here = os.name == "nt"
    for path in WINDOWS_QUALIFIED + WINDOWS_REFUSED + POSIX_QUALIFIED + POSIX_REFUSED:
        assert is_fully_qualified(path) == is_fully_qualified(path, windows=here)


def test_shown_escapes_controls_only() -> None:
    assert shown("C:\\work\\é ü 'x'") == "C:\\work\\é ü 'x'"
    assert shown("/a\0b") == "/a\\x00b"
    assert shown("/a\nb\rc\td") == "/a\\nb\\rc\\td"
    assert shown("/\x1b[31m\x7f\x85\u2028\u202e") == "/\\x1b[31m\\x7f\\x85\\u2028\\u202e"
    assert shown("/\udc80") == "/\\udc80"  # undecodable byte: still encodable afterwards


@pytest.mark.parametrize(
    ("path", "windows", "title"),
    [
        ("C:\\", True, "C:\\"),
        ("C:/", True, "C:/"),
        ("c:\\work\\Acme", True, "Acme"),
        ("c:\\work\\Acme\\", True, "Acme"),
        ("\\\\server\\share", True, "\\\\server\\share"),
        ("\\\\server\\share\\", True, "\\\\server\\share\\"),
        ("\\\\server\\share\\Brand", True, "Brand"),
        ("\\\\?\\C:\\", True, "\\\\?\\C:\\"),
        ("\\\\?\\UNC\\server\\share\\x", True, "x"),
        ("/", False, "/"),
        ("/home/me/Acme", False, "Acme"),
        ("/home/me/Acme/", False, "Acme"),
        ("/home/me/a\\b", False, "a\\b"),  # a backslash is an ordinary character on POSIX
    ],
)
def test_title_for(path: str, windows: bool, title: str) -> None:
    assert title_for(path, windows=windows) == title


@pytest.mark.parametrize(
    ("key", "windows", "parents"),
    [
        ("/a/b/c", False, ["/a/b", "/a", "/"]),
        ("/a", False, ["/"]),
        ("/", False, []),
        ("relative/x", False, []),
        ("c:\\a\\b", True, ["c:\\a", "c:\\"]),
        ("c:\\", True, []),
        ("\\\\server\\share", True, []),
        ("\\\\server\\share\\", True, []),
        ("\\\\server\\share\\a\\b", True, ["\\\\server\\share\\a", "\\\\server\\share"]),
        ("c:work", True, []),
    ],
)
def test_parent_keys(key: str, windows: bool, parents: list[str]) -> None:
    assert parent_keys(key, windows=windows) == parents


# ---------------------------------------------------------------- this machine


def test_refusal_sentences(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    missing = tmp_path / "gone"
    cases = {
        "relative": ("work", "Workspace path is not fully qualified: 'work'"),
        "dot": (".", "Workspace path is not fully qualified: '.'"),
        "empty": ("", "Workspace path is not fully qualified: ''"),
        "nul": (f"{tmp_path}\0x", f"Workspace path is not fully qualified: '{tmp_path}\\x00x'"),
        "missing": (str(missing), f"cannot create a workspace at '{missing}': path does not exist"),
        "file": (str(file), f"cannot create a workspace at '{file}': path is not a directory"),
        "under a file": (
            str(file / "x"),
            f"cannot create a workspace at '{file / 'x'}': path does not exist",
        ),
    }
    for name, (path, message) in cases.items():
        with pytest.raises(Refused) as caught:
            resolve_folder(path)
        assert str(caught.value) == message, name
        assert try_resolve_folder(path) is None


@posix_only
def test_file_message_names_the_canonical_path(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    with pytest.raises(Refused, match=r"at '.*real\.txt': path is not a directory$"):
        resolve_folder(str(tmp_path / "alias.txt"))


def test_os_error_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def denied(path: str, *, strict: bool = False) -> str:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os.path, "realpath", denied)
    with pytest.raises(Refused) as caught:
        resolve_folder(str(tmp_path))
    assert str(caught.value) == f"cannot create a workspace at '{tmp_path}': permission denied"


@posix_only
def test_file_name_with_newline_stays_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "two\nlines"
    odd.write_text("x")
    with pytest.raises(Refused) as caught:
        resolve_folder(str(odd))
    assert (
        str(caught.value)
        == f"cannot create a workspace at '{tmp_path}/two\\nlines': path is not a directory"
    )


@posix_only
def test_canonicalisation(tmp_path: Path) -> None:
    real = tmp_path / "Acme"
    (real / "Brand").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    folder = resolve_folder(str(real))
    assert folder == Folder(str(real.resolve()), str(real.resolve()), identity(str(real)))
    for alias in [
        f"{tmp_path}/link",
        f"{tmp_path}/link/",
        f"{real}/Brand/..",
        f"{real}//",
        f"{tmp_path}/./Acme",
    ]:
        aliased = resolve_folder(alias)
        assert aliased.canonical == folder.canonical, alias
        assert aliased.key == folder.key
        assert aliased.identity == folder.identity is not None
    assert try_resolve_folder(f"{tmp_path}/link") == folder
    assert try_resolve_folder(None) is None


@posix_only
def test_root_keeps_its_spelling() -> None:
    for spelling in ["/", "//", "/.."]:
        folder = resolve_folder(spelling)
        assert folder.canonical == folder.key == "/"
        assert title_for(folder.canonical) == "/"
        assert parent_keys(folder.key) == []


@posix_only
def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(Refused) as caught:
        resolve_folder(str(tmp_path / "a"))
    assert_documented(str(caught.value))
    assert str(caught.value).startswith(f"cannot create a workspace at '{tmp_path}/a': ")


def test_very_long_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused) as caught:
        resolve_folder(str(tmp_path / ("x" * 5000)))
    assert_documented(str(caught.value))


def test_identity_and_status(tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    assert identity(str(tmp_path)) == (os.stat(tmp_path).st_dev, os.stat(tmp_path).st_ino)
    assert identity(str(file)) is None
    assert identity(str(tmp_path / "gone")) is None
    assert identity("/a\0b") is None
    assert folder_status(str(tmp_path)) == "ok"
    assert folder_status(str(file)) == "missing-dir"
    assert folder_status(str(tmp_path / "gone")) == "missing-dir"
    assert folder_status("/a\0b") == "missing-dir"
    sub = tmp_path / "sub"
    sub.mkdir()
    canonical = resolve_folder(str(sub)).canonical
    sub.rmdir()
    assert folder_status(canonical) == "missing-dir"  # the stored path is kept, status changes


# ---------------------------------------------------------------- keys and case probing


@pytest.mark.skipif(sys.platform != "linux", reason="Linux tmp volumes are case-sensitive")
def test_linux_tmp_is_case_sensitive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(paths, "_CASE_CACHE", {})
    mixed = tmp_path / "MiXed"
    mixed.mkdir()
    (tmp_path / "mixed").mkdir()  # a sensitive volume keeps both apart
    assert paths._case_insensitive(str(mixed)) is False
    assert resolve_folder(str(mixed)).key == str(mixed)
    assert resolve_folder(str(tmp_path / "mixed")).key != resolve_folder(str(mixed)).key
    assert path_key(str(tmp_path / "gone" / "Deeper")) == str(tmp_path / "gone" / "Deeper")


@posix_only
def test_probe_detects_a_case_insensitive_volume(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = str(tmp_path.resolve())
    (tmp_path / "data" / "proj").mkdir(parents=True)
    real_stat = os.stat

    def insensitive_stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        text = os.fspath(path)
        if text.startswith(base + "/"):  # below base, lookups ignore case
            text = base + text[len(base) :].lower()
        return real_stat(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(paths, "_CASE_CACHE", {})
    monkeypatch.setattr(os, "stat", insensitive_stat)
    spelled = f"{base}/Data/Proj"
    assert paths._case_insensitive(spelled) is True
    assert path_key(spelled) == path_key(f"{base}/data/proj") == f"{base}/data/proj".lower()
    assert paths._CASE_CACHE == {real_stat(base).st_dev: True}  # remembered per volume


def test_probe_without_cased_letters_uses_the_platform_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    digits = tmp_path / "1" / "2"
    digits.mkdir(parents=True)
    monkeypatch.setattr(paths, "_CASE_CACHE", {})
    # "1" and "2" have no case to swap: the probe climbs to the nearest lettered ancestor
    # (the test's temporary folder), which on this case-sensitive volume decides False.
    assert paths._probe(str(digits), os.stat(digits).st_dev) is False
    assert paths._probe("/", os.stat("/").st_dev) is None


def test_swap_and_fold() -> None:
    assert paths._swap_one("abc") == "Abc"
    assert paths._swap_one("12ß3x") == "12ß3X"  # ß has no one-letter upper case: skipped
    assert paths._swap_one("123") is None
    assert paths._fold("C:\\Work") == "c:\\work"
    assert paths._fold("/Straße/ÄB") == "/straße/äb"  # never ß -> ss: that would merge folders


def test_windows_key_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "_ON_WINDOWS", True)
    assert path_key("C:\\Work\\Acme") == "c:\\work\\acme"
    assert path_key("\\\\?\\C:\\Work") == "c:\\work"
    assert path_key("\\\\?\\UNC\\Server\\Share\\X") == "\\\\server\\share\\x"
    assert paths._tidy_windows_root("\\\\server\\share\\") == "\\\\server\\share"
    assert paths._tidy_windows_root("C:\\") == "C:\\"
    assert parent_keys(path_key("\\\\Server\\Share\\A")) == [path_key("\\\\server\\share")]


def test_macos_key_is_nfc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "_ON_MAC", True)
    monkeypatch.setattr(paths, "_case_insensitive", lambda path: False)
    assert path_key("/Users/me/Cafe\u0301") == "/Users/me/Caf\u00e9"
    monkeypatch.setattr(paths, "_case_insensitive", lambda path: True)
    assert path_key("/Users/me/Cafe\u0301") == "/users/me/caf\u00e9"


# ---------------------------------------------------------------- properties

PATHY = st.text(
    alphabet=st.sampled_from(["\\", "/", ":", "?", ".", "C", "c", "U", "N", "\0", "a", " ", "{"])
)
ANY = st.one_of(
    st.text(),
    PATHY,
    st.text(alphabet=st.characters(exclude_categories=())),  # lone surrogates included
    st.builds(lambda t: "/" + t, st.text()),
)
PROPERTY = settings(deadline=None, max_examples=300)


@PROPERTY
@given(ANY)
def test_pure_rules_never_raise(path: str) -> None:
    windows = is_fully_qualified_windows(path)
    posix = is_fully_qualified_posix(path)
    if "\0" in path or not path:
        assert not windows and not posix
    assert posix == path.startswith("/") or "\0" in path or not path
    for win in (True, False):
        title = title_for(path, windows=win)
        assert isinstance(title, str)
        keys = parent_keys(path, windows=win)
        assert len(set(keys)) == len(keys)
        assert all(len(key) < len(path) for key in keys)
    text = shown(path)
    assert text.splitlines() == ([text] if text else [])
    text.encode("utf-8")  # never a lone surrogate left


@PROPERTY
@given(ANY)
def test_resolve_refuses_only_in_documented_words(path: str) -> None:
    try:
        folder = resolve_folder(path)
    except Refused as refused:
        assert_documented(str(refused))
        assert try_resolve_folder(path) is None
    else:
        assert os.path.isdir(folder.canonical)
        assert try_resolve_folder(path) == folder
        assert folder_status(folder.canonical) == "ok"
