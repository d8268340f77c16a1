#!/usr/bin/env bash
# Build the bundle on Linux with packaging/cairn.spec, as the release scripts do, then run it:
# --version, a command-line round trip on a temporary data folder, the window offscreen
# (--exit-after-first-paint), no build tool or dev package inside, and the start-up time
# against `uv run`. See packaging/README.md ("Checking the bundle").
#
#   packaging/check_bundle.sh              # build, check, time (5 rounds)
#   CAIRN_CHECK_ROUNDS=0 packaging/check_bundle.sh    # build and check, no timing
#   CAIRN_SKIP_BUILD=1 packaging/check_bundle.sh      # check the dist/Cairn already built
#
# CAIRN_BUILD_PYTHON picks the Python to bundle (default 3.12, as the installers ship).
set -euo pipefail
cd "$(dirname "$0")/.."

WANT="${CAIRN_BUILD_PYTHON:-3.12}"
# uv finds Pythons on PATH and its own; a pyenv install is found only through its shim when
# that version is the selected one, so look in pyenv's versions folder too.
if ! PYTHON="$(uv python find "$WANT" 2>/dev/null)"; then
    PYTHON="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$WANT"*/bin/python"$WANT" 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [[ -z "$PYTHON" && -z "${CAIRN_BUILD_PYTHON:-}" ]]; then
    # Asked for nothing in particular: a check on the project's own Python beats no check.
    PYTHON="$(uv python find 2>/dev/null || true)"
    [[ -n "$PYTHON" ]] && echo "check_bundle.sh: no Python $WANT here, building with $PYTHON" >&2
fi
if [[ -z "$PYTHON" ]]; then
    echo "check_bundle.sh: no Python $WANT found (uv python install $WANT, or set CAIRN_BUILD_PYTHON)" >&2
    exit 1
fi

# The build environment of the release scripts: uv.lock's packages without the dev group,
# exactly (sync removes anything else), plus the pinned PyInstaller.
export UV_PROJECT_ENVIRONMENT=build/venv
if [[ "${CAIRN_SKIP_BUILD:-0}" != 1 ]]; then
    echo "==> Build environment ($PYTHON)"
    uv sync --locked --no-dev --python "$PYTHON" --quiet
    uv pip install --python build/venv --require-hashes --quiet -r packaging/build-requirements.txt
    echo "==> PyInstaller"
    start=$SECONDS
    uv run --no-sync pyinstaller --noconfirm --clean --log-level WARN packaging/cairn.spec
    echo "    built in $((SECONDS - start)) s"
fi

echo "==> Checking dist/Cairn"
uv run --no-sync python packaging/check_bundle.py dist/Cairn --rounds "${CAIRN_CHECK_ROUNDS:-5}"
