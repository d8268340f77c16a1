"""Every test gets its own data folder, first-use folder and keyring: never the machine's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from tests.memory_keyring import TEST_KEY, MemoryKeyring
from tests.slow import SLOW_FIXTURES, SLOW_TESTS
from ui.pyside_hook import read_no_sources

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
read_no_sources()  # as `cairn` runs (pytest-qt imported PySide6 before this file)

# CI explores the same examples every run, so a landing never hinges on a lucky draw; local
# runs keep exploring new ones (and remember failures in .hypothesis/).
from hypothesis import settings as _hypothesis  # noqa: E402

_hypothesis.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    _hypothesis.load_profile("ci")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks ``slow`` what tests/slow.py says is."""
    for item in items:
        where = Path(item.path).relative_to(config.rootpath).as_posix()
        name = getattr(item, "originalname", item.name)
        if (item.get_closest_marker("process") is not None
                or where.startswith("tests/process/")
                or any(f in getattr(item, "fixturenames", ()) for f in SLOW_FIXTURES)
                or name in SLOW_TESTS.get(where, ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _alone_when_marked(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``alone`` (it times the event loop against a bar)
    runs with no test of another worker beside it: it takes a lock every other test shares
    (the workers' common temporary folder holds it), so the other worker waits at its next
    test.  On two cores a neighbour's work would otherwise count as Cairn's stall."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or os.name != "posix":  # one process (or no flock): nothing beside it
        yield
        return
    import fcntl

    alone = request.node.get_closest_marker("alone") is not None
    lock = tmp_path_factory.getbasetemp().parent / "alone.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    data = tmp_path / "cairn-data"
    monkeypatch.setenv("CAIRN_DATA_DIR", str(data))
    monkeypatch.setenv("CAIRN_FIRST_USE_DIR", str(tmp_path / "Documents" / "Cairn"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield data
    keyring.set_keyring(previous)


@pytest.fixture
def open_registry(isolated: Path) -> Iterator[object]:
    """Opens registries on the test's data folder and closes them all at the end."""
    from app.store.registry.registry import Registry

    opened: list[Registry] = []

    def opener() -> Registry:
        registry = Registry.open(isolated)
        opened.append(registry)
        return registry

    yield opener
    for registry in opened:
        try:
            registry.close()
        except Exception:
            pass


@pytest.fixture
def quiet_cairn(registry):  # type: ignore[no-untyped-def]
    """The core on the test's registry, offline, with no rebuild started behind the test."""
    from app.cairn import Cairn

    made = Cairn(registry, background_rebuilds=False)
    yield made
    made.storage.close()
    made.network.close()


@pytest.fixture
def registry(open_registry):  # type: ignore[no-untyped-def]
    """A registry with an empty list: the first-use workspace, created at first start, removed."""
    reg = open_registry()
    first = reg.first_use_workspace_id
    if first:
        reg.remove_workspace(first)
    return reg


@pytest.fixture
def folders(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Makes real directories under the test's temporary folder: folders("Acme", "Acme/Brand")."""

    def make(*names: str) -> list[str]:
        made = []
        for name in names:
            path = tmp_path / "disk" / name
            path.mkdir(parents=True, exist_ok=True)
            made.append(str(path))
        return made

    return make


@pytest.fixture
def fake():  # type: ignore[no-untyped-def]
    """A fake Anthropic server on 127.0.0.1 (see tests/fake_anthropic.py)."""
    from tests.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def online(isolated, fake):  # type: ignore[no-untyped-def]
    """Cairn on the test's data folder, talking to the fake server with a key in the keyring."""
    from app.cairn import Cairn

    cairn = Cairn.open(isolated)
    cairn.settings.set("api.base_url", fake.base_url)
    cairn.settings.set_api_key(TEST_KEY)
    yield cairn
    cairn.close()


@pytest.fixture
def workspace(online, folders):  # type: ignore[no-untyped-def]
    """A workspace ("Acme Inc") in the online Cairn."""
    (root,) = folders("Acme Inc")
    ws, _ = online.registry.add_workspace(root)
    return ws
