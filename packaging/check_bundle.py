"""Run a built bundle the way a person would, and time it against `uv run`: check_bundle.sh's checks.

    uv run --no-sync python packaging/check_bundle.py dist/Cairn [--rounds N]

Exits 1 when a check fails: the version, a command-line round trip on a temporary data folder,
the window's first paint offscreen, or a build tool (setuptools, pytest...) in the bundle. The
start-up times are reported, not judged (the machines that run this are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Top-level names that must never ship: build tools and the dev group.
FORBIDDEN = {"setuptools", "pkg_resources", "_distutils_hack", "distutils", "pip", "wheel",
             "pytest", "_pytest", "pytestqt", "pytest_asyncio", "hypothesis"}
failures: list[str] = []
passes: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    (passes if ok else failures).append(what)


def bundle_env(data: Path) -> dict[str, str]:
    """A person's environment: no virtual environment leaking in, a data folder of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("UV_")}
    env.update(CAIRN_DATA_DIR=str(data / "data"), CAIRN_FIRST_USE_DIR=str(data / "first-use"),
               QT_QPA_PLATFORM="offscreen",
               # Never the real keychain of whoever runs this.
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=180)


def cli_round_trip(exe: Path, tmp: Path) -> None:
    env = bundle_env(tmp)
    project = tmp / "Acme"
    (project / "Brand").mkdir(parents=True)

    def cairn(*args: str) -> object:
        done = run([str(exe), *args], env, cwd=tmp)
        if done.returncode != 0:
            check(False, f"cairn {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
            raise SystemExit(1)
        return json.loads(done.stdout) if "--json" in args else done.stdout

    acme = cairn("workspace", "add", str(project), "--json")
    brand = cairn("workspace", "add", str(project / "Brand"), "--json")
    cairn("workspace", "rename", acme["id"], "Acme Inc")
    cairn("workspace", "advance", acme["id"])
    chat = cairn("chat", "new", "--folder", str(project / "Brand"), "--title", "Launch copy", "--json")
    shown = cairn("workspace", "show", acme["id"], "--json")
    listing = cairn("chat", "list", "--json")
    check(shown["title"] == "Acme Inc" and shown["build_status"] == "planning"
          and brand["parent"] == acme["id"] and chat["workspace"] == brand["id"]
          and any(c["id"] == chat["id"] for w in listing["workspaces"] for c in w["chats"]),
          "command line: add, nest, rename, advance, chat new, list (JSON)")
    export = tmp / "acme.cairn"
    cairn("export", acme["id"], str(export))
    (tmp / "Imported").mkdir()
    cairn("import", str(export), str(tmp / "Imported"))
    titles = [w["title"] for w in cairn("workspace", "list", "--json")]
    check(titles.count("Acme Inc") == 2, "command line: export, then import into another folder")
    # A turn against the fake Anthropic server on 127.0.0.1 (tests/fake_anthropic.py, standard
    # library only): the SDK, httpx2, truststore and the storage of a reply, all frozen.
    sys.path.insert(0, str(ROOT))
    from tests.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as fake:
        fake.reply_text("Brand colours: orange #FF5500.")  # under 80 characters: no rebuild
        asked = run([str(exe), "ask", "--chat", chat["id"], "What are our brand colours?"],
                    {**env, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake.base_url},
                    cwd=tmp)
    stored = cairn("chat", "show", chat["id"], "--json")
    check(asked.returncode == 0 and "#FF5500" in asked.stdout
          and stored["messages"][-1]["status"] == "complete",
          "command line: `cairn ask` streams a reply from a fake server on 127.0.0.1 and stores it"
          + ("" if asked.returncode == 0 else f": {asked.returncode} {asked.stderr[-500:]}"))
    if sys.platform == "linux":  # the dynamic loader names every library it opens
        traced = run([str(exe), "workspace", "list"], {**env, "LD_DEBUG": "files"}, cwd=tmp)
        qt = sorted(set(re.findall(r"file=(\S*libQt6\w+)", traced.stderr)))
        check(traced.returncode == 0 and not qt,
              f"command line: `workspace list` loads no Qt library: {qt or 'none'}")
    bad = run([str(exe), "workspace", "add", "relative/path"], env, cwd=tmp)
    check(bad.returncode == 1 and "not fully qualified" in bad.stderr,
          "command line: a refused operation exits 1 with its sentence on stderr")


def bundle_contents(bundle: Path, exe: Path) -> set[str]:
    """Top-level names of every module in the executable's archive and every file beside it."""
    viewer = Path(sys.executable).with_name("pyi-archive_viewer")
    listing = subprocess.run([str(viewer), "-r", "-b", str(exe)], capture_output=True, text=True,
                             check=True).stdout
    names = {line.strip().split(".")[0] for line in listing.splitlines() if line.startswith(" ")}
    for path in bundle.rglob("*"):
        names.add(path.name.split(".")[0].split("-")[0])
    return names


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=180)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def start_times(exe: Path, tmp: Path, rounds: int) -> list[tuple[str, float, float, float]]:
    """Medians, interleaved: the frozen app, `uv run` on the same build environment, its bare python."""
    env = bundle_env(tmp)
    uv_env = {**os.environ, **{k: v for k, v in env.items() if k.startswith(("CAIRN_", "QT_", "PYTHON_K"))}}
    venv_cairn = Path(sys.executable).with_name("cairn")
    uv_run = ["uv", "run", "--locked", "--no-dev", "--python", sys.executable, "cairn"]
    rows = []
    for label, args in (("window, first paint (`--exit-after-first-paint`)", ["--exit-after-first-paint"]),
                        ("command line (`workspace list`)", ["workspace", "list"])):
        frozen, via_uv, bare = [], [], []
        for i in range(rounds + 1):  # the first round warms the disk cache and bytecode, unused
            samples = (timed([str(exe), *args], env), timed(uv_run + args, uv_env),
                       timed([str(venv_cairn), *args], uv_env))
            if i:
                for series, sample in zip((frozen, via_uv, bare), samples):
                    series.append(sample)
        rows.append((label, statistics.median(frozen), statistics.median(via_uv),
                     statistics.median(bare)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bundle = args.bundle.resolve()
    exe = bundle / ("Cairn.exe" if os.name == "nt" else "Cairn")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

    with tempfile.TemporaryDirectory(prefix="cairn-bundle-") as name:
        tmp = Path(name)
        done = run([str(exe), "--version"], bundle_env(tmp))
        check(done.returncode == 0 and done.stdout.strip() == f"Cairn {version}",
              f"--version prints 'Cairn {version}' (pyproject.toml): got {done.stdout.strip()!r}")
        cli_round_trip(exe, tmp / "cli")
        paint = run([str(exe), "--exit-after-first-paint"], bundle_env(tmp / "window"))
        check(paint.returncode == 0, "window offscreen, --exit-after-first-paint exits 0"
              + ("" if paint.returncode == 0 else f": {paint.returncode} {paint.stderr[-500:]}"))
        notices = bundle / "_internal" / "licenses" / "THIRD-PARTY-NOTICES.txt"
        text = notices.read_text(encoding="utf-8") if notices.is_file() else ""
        check(all(word in text for word in ("PySide6", "LESSER GENERAL PUBLIC LICENSE",
                                            "PYTHON SOFTWARE FOUNDATION LICENSE", "anthropic")),
              "third-party notices shipped (Qt/PySide6 LGPL-3.0, Python's PSF licence, the rest)")
        shipped = bundle_contents(bundle, exe) & FORBIDDEN
        check(not shipped, f"no build tool or dev package in the bundle: {sorted(shipped) or 'none'}")
        if failures:
            print(f"\nbundle: {len(passes)} passed, {len(failures)} failed")
            return 1
        if args.rounds:
            rows = start_times(exe, tmp / "timing", args.rounds)

    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file() and not p.is_symlink())
    files = sum(1 for p in bundle.rglob("*") if p.is_file())
    print(f"\nCairn {version} bundle on {platform.system()} {platform.machine()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "")
    print(f"\n| bundle | size |\n| --- | ---: |\n| `{bundle.name}/`, {files} files | "
          f"{size / 1e6:.0f} MB |")
    if args.rounds:
        print(f"\n| start, median of {args.rounds} interleaved | frozen | `uv run` | "
              "venv's `cairn` | frozen / `uv run` |\n| --- | ---: | ---: | ---: | ---: |")
        for label, frozen, via_uv, bare in rows:
            print(f"| {label} | {frozen * 1000:.0f} ms | {via_uv * 1000:.0f} ms | "
                  f"{bare * 1000:.0f} ms | {frozen / via_uv:.2f}× |")
    print(f"\nbundle: {len(passes)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
