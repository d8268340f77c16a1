"""cairn:// links: a small grammar, read as hostile input — only
cairn://open?workspace=ID and cairn://chat/ID are taken, anything else is one sentence —
and each system told that Cairn opens them (the Linux desktop entry, the macOS Info.plist,
the Windows installer)."""

from __future__ import annotations

import plistlib
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.base import cairn_link
from app.base.cairn_link import Link, is_link, parse
from app.base.ids import new_id
from app.errors import Refused

ROOT = Path(__file__).resolve().parents[3]
WS, CH = "ws_0123456789ab", "ch_abcdefghijkl"


@pytest.mark.parametrize("text, link", [
    (f"cairn://open?workspace={WS}", Link("workspace", WS)),
    (f"cairn://open/?workspace={WS}", Link("workspace", WS)),
    (f"CAIRN://open?workspace={WS}", Link("workspace", WS)),
    (f"cairn://chat/{CH}", Link("chat", CH)),
    (f"cairn://chat/{CH}/", Link("chat", CH)),
])
def test_the_grammar_is_taken(text, link):
    assert parse(text) == link
    assert parse(str(link)) == link  # its one normal spelling reads back


@pytest.mark.parametrize("text", [
    "cairn://open?workspace=/home/me/secret",  # a path: never a folder to add
    f"cairn://open?workspace={WS}&send=hello",  # no other parameter
    f"cairn://open?workspace={WS}#x", f"cairn://chat/{CH}?x=1",
    f"cairn://chat/{CH.upper()}", f"cairn://chat/{CH}x", "cairn://chat/ch_short",
    f"cairn://user@chat/{CH}", f"cairn://chat:80/{CH}", f"cairn:chat/{CH}",
    f"cairn://chat/{CH[:-1]}%6C", f"cairn://chat/{CH}\n", f" cairn://chat/{CH}",
    f"cairn://chat/../{CH}", f"cairn://open?workspace={CH}", f"cairn://chat/{WS}",
    "cairn://chat/ch_abcdefghijk\u0131",  # a dotless i: not an id letter
    "cairn://", "cairn:", "cairn://delete?workspace=" + WS,
    "cairn://chat/" + "a" * 300,
])
def test_anything_else_is_refused_in_one_sentence(text):
    with pytest.raises(Refused) as refused:
        parse(text)
    assert str(refused.value) == cairn_link.REFUSAL and "\n" not in cairn_link.REFUSAL


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.text(max_size=250),
    st.text(max_size=60).map(lambda t: "cairn://" + t),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_/?=&%.:#@",
            max_size=50).map(lambda t: "cairn://" + t),
    st.builds(lambda kind, tail: f"cairn://{kind}{tail}",
              st.sampled_from(["open?workspace=ws_", "chat/ch_", "open/?workspace=ws_"]),
              st.text(max_size=16))))
@example(f"cairn://chat/{CH}")
def test_any_string_is_taken_only_when_it_is_the_grammar(text):
    """Never crashes; what is taken is exactly the grammar, and reads back the same."""
    grammar = re.compile(r"(?i:cairn):(?://open/?\?workspace=ws_[a-z0-9]{12}"
                         r"|//chat/ch_[a-z0-9]{12}/?)")
    try:
        link = parse(text)
    except Refused as refused:
        assert str(refused) == cairn_link.REFUSAL
        assert not (grammar.fullmatch(text) and text.isascii())
        return
    assert grammar.fullmatch(text) and text.isascii() and len(text) <= cairn_link.MAX_LENGTH
    assert parse(str(link)) == link and link.id in text


def test_ids_cairn_makes_are_taken():
    for prefix, kind in (("ws", "workspace"), ("ch", "chat")):
        made = new_id(prefix)
        text = f"cairn://open?workspace={made}" if kind == "workspace" else f"cairn://chat/{made}"
        assert parse(text) == Link(kind, made)


def test_only_text_that_says_cairn_colon_is_a_link():
    assert is_link("Cairn://x") and not is_link("/home/cairn://x") and not is_link(None)


def test_each_system_is_told_cairn_opens_its_links():
    from app.base.desktop_entry import desktop_entry

    entry = desktop_entry(["/opt/Cairn/Cairn"])
    assert "MimeType=application/x-cairn-bundle;x-scheme-handler/cairn;\n" in entry
    assert "Exec=/opt/Cairn/Cairn %u\n" in entry  # a link, or a file as a path or a URL
    types = cairn_link.macos_url_types()
    plistlib.dumps({"CFBundleURLTypes": types})
    assert types[0]["CFBundleURLSchemes"] == ["cairn"]
    assert '"CFBundleURLTypes": macos_url_types(),' in (ROOT / "packaging" /
                                                        "cairn.spec").read_text()
    iss = (ROOT / "installer.iss").read_text()
    assert 'Subkey: "Software\\Classes\\cairn"; ValueType: string; ValueName: "URL Protocol"' in iss
    assert ('Subkey: "Software\\Classes\\cairn\\shell\\open\\command"; ValueType: string; '
            'ValueName: ""; ValueData: """{app}\\Cairn.exe"" open ""%1"""') in iss


def test_install_desktop_gives_cairn_links_to_cairn(tmp_path):
    from app.base.desktop_entry import install

    ran: list[list[str]] = []
    install(tmp_path, ["/opt/Cairn/Cairn"], which=lambda name: f"/bin/{name}", run=ran.append)
    assert ["/bin/xdg-mime", "default", "app.cairn.Cairn.desktop",
            "x-scheme-handler/cairn"] in ran
