"""Starting the window: one per data folder, painted first, filled in from a worker thread.

1. No display (Linux without X or Wayland): one sentence, exit 1, never a Qt abort.
2. A window already runs on this data folder: hand it the path (or ask it to come forward),
   exit 0, or exit 1 with its refusal sentence.
3. Otherwise show the window at once, open the core on a worker thread, attach it, then do
   the slow things in the background: the SDK import and the keychain (warm-up), each
   folder's status, rebuilds left waiting, and watching for other processes' writes.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import PySide6  # noqa: F401  # the package first: its import hook, made cheap before the modules below

from ui.pyside_hook import read_no_sources

read_no_sources()

from PySide6.QtCore import (  # noqa: E402  # loads no platform plugin: fine without a display
    QEvent,
    QObject,
)

from app.base import locations  # noqa: E402
from app.errors import CairnError  # noqa: E402

if TYPE_CHECKING:
    import asyncio

    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QFileOpenEvent
    from PySide6.QtWidgets import QApplication

    from app.cairn import Cairn
    from app.ops import Operations
    from ui.board import Board
    from ui.tasks import Recurring
    from ui.window import MainWindow

log = logging.getLogger(__name__)

QUIT_WAIT_SECONDS = 5.0
CATCH_UP_MS = 1_000  # how often the window looks for another process's writes
FOLDERS_EVERY = 3  # catch-ups: every third, the workspaces' folders are looked at (gone?)
LOAD_AFTER_MS = 3_000  # the start-up load begins at the filled paint, or after this at most
RESOURCES = Path(__file__).resolve().parent.parent / "resources"
MACOS = sys.platform == "darwin"  # the only system that sends QFileOpenEvent to Cairn


def no_display() -> bool:
    """Linux or another X11 system without any display the xcb or wayland plugins could use."""
    if sys.platform in ("win32", "darwin") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run(*, data_dir: Path | None, open_path: str | None, exit_after_first_paint: bool,
        on_first_paint: Callable[[], object] | None = None,
        on_ready: Callable[[], object] | None = None,
        on_panels: Callable[[], object] | None = None) -> int:
    """The window's process, from start to exit.

    The window paints before anything it does not need to paint is loaded: asyncio and qasync,
    logging, QtNetwork (for listening to later starts) and the core all come after the first
    paint.  *on_first_paint*, *on_ready* (the filled paint) and *on_panels* (the chat and
    knowledge panels built, after it) are for the start-up benchmark.
    """
    import gc

    # Start-up makes a few hundred thousand objects (modules, Qt's enums, the first paint's
    # records) and no garbage worth finding, yet the cyclic collector ran ~150 times in a
    # start at 50,000 chats and took ~75 ms of it.  It waits until the filled paint, which
    # freezes what start-up made (Starter._after_ready): later collections never walk it.
    # (``cairn`` holds it from its first line: ui.main.)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(data_dir=data_dir, open_path=open_path,
                    exit_after_first_paint=exit_after_first_paint,
                    on_first_paint=on_first_paint, on_ready=on_ready, on_panels=on_panels)
    finally:
        if collecting:
            gc.enable()


def _run(*, data_dir: Path | None, open_path: str | None, exit_after_first_paint: bool,
         on_first_paint: Callable[[], object] | None,
         on_ready: Callable[[], object] | None,
         on_panels: Callable[[], object] | None) -> int:
    if data_dir is not None:
        os.environ["CAIRN_DATA_DIR"] = str(data_dir)  # logs follow the data folder
    if no_display():
        sys.stderr.write("Cairn's window needs a display, and none was found (no DISPLAY or "
                         "WAYLAND_DISPLAY); the command line works without one: cairn --help\n")
        return 1
    folder = locations.data_dir()

    from PySide6.QtWidgets import QApplication

    from ui.instance import hand_over

    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setApplicationName("Cairn")
    # Wayland matches the window to `cairn install-desktop`'s entry (its icon, its name) by this.
    app.setDesktopFileName("app.cairn.Cairn")
    app.setQuitOnLastWindowClosed(True)

    # Another window on this data folder takes the path, and this start ends here.
    reply = hand_over(folder, {"open": open_path} if open_path else {"raise": True})
    if reply is not None:
        if reply.get("error"):
            from app.base.paths import shown

            # (escaped: a terminal would otherwise act on an escape sequence in it)
            sys.stderr.write(shown(str(reply["error"])) + "\n")
            return 1
        if open_path:  # said, not silent: the terminal's person sees where it went
            from app.base.paths import shown

            sys.stdout.write(f"Opened {shown(open_path)} in the Cairn window already "
                             "running.\n")
        return 0

    opener = FileOpenFilter()  # macOS may send a folder dropped on the Dock at launch
    if MACOS:  # (elsewhere none come, and a filter sees every event of the application)
        app.installEventFilter(opener)
    window = show_window(app, folder, on_first_paint=on_first_paint)
    paint_first(app, window)

    from ui.theme import follow_scheme

    follow_scheme(app)

    import asyncio

    import qasync
    from PySide6.QtCore import QTimer

    from app.base.logs import setup_logging

    setup_logging()
    starter = Starter(app, window, folder, open_path=open_path,
                      exit_after_first_paint=exit_after_first_paint)
    opener.attach(starter)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        loop.call_soon(starter.begin)
        if on_ready is not None:
            window.sig_ready.connect(on_ready)
        if on_panels is not None:
            window.sig_panels.connect(on_panels)
        if exit_after_first_paint:
            window.sig_ready.connect(lambda: QTimer.singleShot(0, app.quit))
        loop.run_until_complete(closed.wait())
        loop.run_until_complete(starter.finish())
    return starter.exit_code


def exit_now(code: int) -> NoReturn:
    """End the window's process at once, once :func:`run` has returned: by then the core is
    closed (every write stored, the database closed, its WAL checkpointed away), the window
    state synced and every thread that writes joined; what is left is the interpreter's
    teardown — freeing every object, module and widget one by one — which took ~90 ms at
    50,000 chats and keeps nothing.  The logs are flushed and closed first.

    While Cairn owns the clipboard, the application object is destroyed first: on X11 and
    Windows what was copied survives the process only if the application hands it over as
    it goes.  (Never the interpreter's own teardown: a daemon thread still at work — the
    keychain's first answer, the SDK's import — can abort it.)"""
    import logging

    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if app is not None:
        clipboard = QGuiApplication.clipboard()
        if clipboard.ownsClipboard() or clipboard.ownsSelection():
            app.shutdown()  # (PySide's: deletes the application and every object it owns)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken pipe: nothing more can be said on it
            pass
    os._exit(code)


def show_window(app: QApplication, folder: Path, *, dark: bool | None = None,
                on_first_paint: Callable[[], object] | None = None) -> MainWindow:
    """The window, shown at once (painted when the events are next processed)."""
    from PySide6.QtGui import QIcon

    from ui.theme import apply_theme
    from ui.window import MainWindow

    apply_theme(app, dark=dark)
    app.setWindowIcon(QIcon(str(RESOURCES / "icons" / "cairn.png")))  # (PNG: no SVG plugin yet)
    window = MainWindow(folder)
    if on_first_paint is not None:
        window.sig_first_paint.connect(on_first_paint)
    window.show()
    return window


def paint_first(app: QApplication, window: MainWindow, timeout_ms: int = 2_000) -> None:
    """Process events until the window has painted once (or *timeout_ms* passed: a window
    that is not shown, minimised or on another desktop, paints when it is shown)."""
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    clock = QElapsedTimer()
    clock.start()
    wake = QTimer()
    wake.setInterval(50)  # WaitForMoreEvents never waits longer than this
    wake.start()
    while not window.painted and clock.elapsed() < timeout_ms:
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    wake.stop()


def start(app: QApplication, folder: Path, *, open_path: str | None = None,
          exit_after_first_paint: bool = False, dark: bool | None = None) -> Starter:
    """Show the window at once and get ready to open the core (``starter.begin()`` on the
    running loop): the tests' and the screenshots' way in."""
    window = show_window(app, folder, dark=dark)
    if dark is None:
        from ui.theme import follow_scheme

        follow_scheme(app)
    starter = Starter(app, window, folder, open_path=open_path,
                      exit_after_first_paint=exit_after_first_paint)
    starter.file_open_filter = FileOpenFilter()  # macOS: folders dropped on the Dock
    starter.file_open_filter.attach(starter)
    if MACOS:
        app.installEventFilter(starter.file_open_filter)
    return starter


class FileOpenFilter(QObject):
    """macOS sends a folder dropped on the Dock icon as a ``QFileOpenEvent``: handled like a
    later `cairn PATH`.  One that arrives before the core is ready waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.starter: Starter | None = None
        self.pending: list[str] = []

    def attach(self, starter: Starter) -> None:
        self.starter = starter
        starter.file_open_filter = self
        for path in self.pending:
            starter.open_file_event(path)
        self.pending.clear()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.FileOpen:
            opened = cast("QFileOpenEvent", event)
            # A file or folder, or a cairn:// link (Info.plist's CFBundleURLTypes): its URL.
            path = opened.file() or (opened.url().toString()
                                     if opened.url().scheme().lower() == "cairn" else "")
            if path and self.starter is not None:
                self.starter.open_file_event(path)
            elif path:
                self.pending.append(path)
            return True
        return False


class Starter:
    """Opens the core off the GUI thread and wires it to the window; ends it at quit."""

    def __init__(self, app: QApplication, window: MainWindow, folder: Path, *,
                 open_path: str | None, exit_after_first_paint: bool) -> None:
        from ui.instance import InstanceServer

        self.app = app
        self.window = window
        self.folder = folder
        self.open_path = open_path
        self.headless = exit_after_first_paint  # nothing modal may block a timed start
        self.exit_code = 0
        self.cairn: Cairn | None = None
        self.ops: Operations | None = None
        self._timer: QTimer | None = None
        self._quitting = False
        self._after_ready_done = False
        self._catching_up: Recurring | None = None  # the catch-up, once the core is there
        self._catch_ups = 0  # how many catch-ups ran (every few, the folders too)
        self._board: Board | None = None
        self._loading: asyncio.Task[Any] | None = None  # the start-up load's pages
        self.file_open_filter: FileOpenFilter | None = None
        self.server = InstanceServer(folder, self._request, parent=window)
        self.server.listen()

    def begin(self) -> None:
        self.window.run_task(self._open())

    async def _open(self) -> None:
        import asyncio

        from PySide6.QtCore import QTimer

        from app.cairn import Cairn
        from app.ops import Operations
        from ui.bridge import EventBridge

        loop = asyncio.get_running_loop()
        first = self.window.first_paint()  # what the filled-in window shows: read first
        try:
            self.cairn = await loop.run_in_executor(
                None, lambda: Cairn.open(self.folder, first=first))
        except CairnError as error:
            self._refuse_start(str(error))
            return
        self.ops = Operations(self.cairn)
        bridge = EventBridge(self.cairn.registry, self.window)
        self.window.attach(self.cairn, self.ops, bridge)
        self.window.sig_board_requested.connect(self.show_board)
        self.window.sig_closing.connect(self._close_other_windows)
        self.window.sig_settings_requested.connect(self.show_settings)
        if self.open_path:
            await self.window.open_path(self.open_path)
        # The slow things, in the background, after the window is filled in: first the
        # chats it did not need (in pages on the storage thread; a read that needs one of
        # them waits for its page only), then the rest.
        self.window.sig_ready.connect(self._after_ready)  # once the filled window painted
        QTimer.singleShot(LOAD_AFTER_MS, self._after_ready)  # (a window not shown: anyway)
        # The SDK (~90 MB and ~0.7 s of imports) is loaded once the person starts writing a
        # message, on a thread of its own, so that their first Send does not wait for it;
        # a window only looked at never loads it.  (A Send before that loads it off the GUI
        # thread too: ChatEngine.client_async.)
        self.window.sig_typing.connect(self._warm_up)

    def _after_ready(self) -> None:
        """The filled window has painted (or LOAD_AFTER_MS passed): the start-up's garbage
        collection resumes, the chat and knowledge panels are built, and the background
        work begins."""
        import gc

        from PySide6.QtCore import QTimer

        if self._after_ready_done or self.ops is None or self._quitting:
            return
        self._after_ready_done = True
        gc.freeze()  # what start-up made stays out of every later collection's walk
        gc.enable()
        if self.headless:  # a timed start quits at this paint: nothing after it matters
            return
        self.window.attach_panels()
        assert self.cairn is not None  # (made with ops)
        self.cairn.scheduler.resume()  # rebuilds a quit left waiting
        self._loading = self.window.run_task(self._load_rest())
        self.window.run_task(self.ops.check_folders())
        self.window.run_task(self.window.check_key())  # no key: said now, not at a failure
        self._timer = QTimer(self.window)
        self._timer.setInterval(CATCH_UP_MS)
        self._timer.timeout.connect(self._catch_up)
        self._timer.start()

    def _warm_up(self) -> None:
        if self.ops is not None and not self._quitting:
            self.window.run_task(self.ops.warm_up())

    async def _load_rest(self) -> None:
        import gc

        assert self.ops is not None
        try:
            await self.ops.load_rest()
        except CairnError as error:  # the integrity check, left for after the first paint
            self._refuse_start(str(error))
            return
        gc.freeze()  # every chat's record: never walked by a collection either

    def _refuse_start(self, sentence: str) -> None:
        """A start-up inconsistency or a newer database: say so, name the data folder, open
        nothing else."""
        from PySide6.QtWidgets import QMessageBox

        from ui.text import message_box

        self.exit_code = 1
        message = f"{sentence}\n\nData folder: {self.folder}"
        sys.stderr.write(sentence + "\n")
        if not self.headless:
            box = message_box(QMessageBox.Icon.Critical, "Cairn cannot start", message,
                              buttons=QMessageBox.StandardButton.Close, parent=self.window)
            box.setObjectName("startup-problem")
            box.setAccessibleName("Cairn cannot start")
            box.finished.connect(lambda _: self.app.quit())
            box.open()
        else:
            self.app.quit()

    def _catch_up(self) -> None:
        """Another process (the command line) may have written: the registry catches up on
        the writer thread, and its Reset reaches the sidebar through the bridge.  One run at
        a time; one that died without ending is started again (ui.tasks.Recurring)."""
        if self.ops is None or self._quitting:
            return
        if self._catching_up is None:
            from ui.tasks import Recurring

            self._catching_up = Recurring(self.window.run_task, self._sync,
                                          name="catch-up with other processes")
        self._catching_up.tick()

    async def _sync(self) -> None:
        assert self.ops is not None and self.cairn is not None  # attached before ops
        self._catch_ups += 1
        folders = self._catch_ups % FOLDERS_EVERY == 0
        changed, _ = await self.ops.run(self.cairn.registry.sync)
        if changed:  # `cairn settings set`: an open Settings dialog shows it
            await self.ops.run(self.cairn.settings.reload)
        if folders:  # a folder deleted or moved (or back) shows within seconds
            await self.ops.check_folders()
        if changed and self.window.chat_panel is not None:
            self.window.chat_panel.written_elsewhere()  # `cairn ask` in the open chat

    def _request(self, request: dict[str, Any],
                 answer: Callable[[dict[str, Any]], None]) -> None:
        """A later `cairn PATH` (or a macOS file-open event): add it, select it, come forward."""
        self.window.bring_forward()
        path = request.get("open")
        if not isinstance(path, str) or not path:
            answer({"ok": True})
            return

        async def add() -> None:
            sentence = await self.window.open_path(path)
            answer({"error": sentence} if sentence else {"ok": True})

        self.window.run_task(add())

    def open_file_event(self, path: str) -> None:
        if self.ops is None:  # at launch, before the core is attached: open it then
            self.open_path = path
            return
        self._request({"open": path}, lambda reply: None)

    def show_board(self) -> None:
        from ui.board import Board

        if self._board is None:
            # Requested from the window only once the core is attached.
            assert self.cairn is not None and self.ops is not None
            assert self.window.bridge is not None
            self._board = Board(self.cairn.registry, self.window.bridge, self.ops)
            self._board.setWindowTitle("Status board — Cairn")
            self._board.sig_workspace_opened.connect(self._open_from_board)
            # Over the main window and about its size (issue 36: it opened in the screen's
            # corner, its cards narrow); once placed, where the person moves it.
            frame = self.window.frameGeometry()
            self._board.resize(max(980, int(frame.width() * 0.9)),
                               max(560, int(frame.height() * 0.85)))
            centre = frame.center()
            self._board.move(centre.x() - self._board.width() // 2,
                             centre.y() - self._board.height() // 2)
        self._board.show()
        self._board.raise_()
        self._board.activateWindow()

    def _close_other_windows(self) -> None:
        """The main window closed (Quit, or its close button): so do the board and any
        other top-level window, and the last one closed quits the application."""
        if self._board is not None:
            self._board.close()
        for widget in self.app.topLevelWidgets():
            if widget is not self.window and widget.isVisible() and widget.isWindow():
                widget.close()

    def _open_from_board(self, ws_id: str) -> None:
        self.window.select_workspace(ws_id)
        self.window.bring_forward()

    def show_settings(self) -> None:
        from PySide6.QtCore import Qt

        from ui.settings import SettingsDialog

        cairn = self.cairn
        assert cairn is not None and self.ops is not None  # requested once attached
        dialog = SettingsDialog(self.ops, registry=cairn.registry, settings=cairn.settings,
                                catalog=cairn.catalog, parent=self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # a fresh one each time
        if self.window.bridge is not None:
            self.window.bridge.sig_setting_changed.connect(dialog.changed_elsewhere)
        dialog.finished.connect(lambda _r: self.window.run_task(self.window.check_key()))
        dialog.open()

    async def finish(self) -> None:
        """At quit: stop watching, park pending rebuilds within a bounded wait, close."""
        self._quitting = True
        if self._timer is not None:
            self._timer.stop()
        if self._loading is not None:  # quitting: the pages not read yet are not needed
            self._loading.cancel()
        if self.ops is not None:  # nor the background reads queued on the storage thread
            self.ops.quitting()
        self.server.close()
        if self.file_open_filter is not None:
            self.app.removeEventFilter(self.file_open_filter)
        if self.cairn is None:
            return
        try:
            await self.window.before_quit()
        except Exception:
            log.exception("the chat could not be put away")
        try:
            await self.cairn.drain_rebuilds(QUIT_WAIT_SECONDS)
        except Exception:
            log.exception("pending rebuilds could not be parked")
        assert self.ops is not None  # (made with the core)
        self.ops.close()  # a search's index write finishes before the database closes
        self.cairn.close()
        await self.window.end_tasks()  # every write is stored by now: the rest is reads
