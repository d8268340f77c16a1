#!/usr/bin/env bash
# Build dist/Cairn.app and dist/Cairn-<version>.dmg on macOS.
#
#   packaging/build_macos.sh
#
# Optional environment:
#   CAIRN_SIGN_IDENTITY   "Developer ID Application: Name (TEAMID)" — sign with the hardened runtime.
#                         Unset: the app keeps PyInstaller's ad-hoc signature (runs locally only).
#   CAIRN_NOTARY_PROFILE  a `xcrun notarytool store-credentials` profile — notarize and staple the
#                         app, then the dmg made from the stapled app; check both with spctl.
#   CAIRN_BUILD_PYTHON    the Python to bundle (default 3.12). Its architecture is the app's: the
#                         dmg is named Cairn-<version>-<arm64|x86_64>.dmg (no universal2 build:
#                         see packaging/README.md).
#
# Fail on any error, unset variable or failed pipe stage: a half-signed app must never be shipped.
set -euo pipefail

# Run from the repository root whatever the caller's directory, so relative paths below hold.
cd "$(dirname "$0")/.."

if [[ "$(uname -s)" != "Darwin" ]]; then
    echo "build_macos.sh needs macOS (codesign, hdiutil)" >&2
    exit 1
fi

# Installers ship Python 3.12 (DESIGN.md section 2) while development may run 3.11, so the build has its
# own environment and leaves the developer's .venv alone: exactly what uv.lock pins without the
# dev group (--locked fails on a stale lock; sync removes anything else), plus the pinned
# PyInstaller of packaging/build-requirements.txt.
export UV_PROJECT_ENVIRONMENT="${UV_PROJECT_ENVIRONMENT:-build/venv}"
uv sync --locked --no-dev --python "${CAIRN_BUILD_PYTHON:-3.12}"
uv pip install --python "$UV_PROJECT_ENVIRONMENT" --require-hashes -r packaging/build-requirements.txt
UV_RUN=(uv run --no-sync)

# pyproject.toml is the only place the version is written (tomllib needs the 3.11+ from uv;
# the system python3 may be older).
VERSION="$("${UV_RUN[@]}" python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
ARCH="$("${UV_RUN[@]}" python -c 'import platform; print(platform.machine())')"
APP="dist/Cairn.app"
DMG="dist/Cairn-${VERSION}-${ARCH}.dmg"
ENTITLEMENTS="packaging/entitlements.plist"

echo "==> Building Cairn ${VERSION} for ${ARCH}"
"${UV_RUN[@]}" pyinstaller --noconfirm --clean packaging/cairn.spec

# The app must say the version it was built from.
SAID="$("$APP/Contents/MacOS/Cairn" --version)"
if [[ "$SAID" != "Cairn ${VERSION}" ]]; then
    echo "$APP says '$SAID', not 'Cairn ${VERSION}'" >&2
    exit 1
fi

if [[ -n "${CAIRN_NOTARY_PROFILE:-}" && -z "${CAIRN_SIGN_IDENTITY:-}" ]]; then
    echo "CAIRN_NOTARY_PROFILE needs CAIRN_SIGN_IDENTITY: Apple notarizes only signed code" >&2
    exit 1
fi

STAGING="$(mktemp -d)"
trap 'rm -rf "$STAGING"' EXIT

# Submit one file to Apple's notary service and fail unless it was accepted (`--wait` alone
# returns once a verdict exists, whatever it is).
notarize() {
    local result
    result="$(xcrun notarytool submit "$1" --keychain-profile "$CAIRN_NOTARY_PROFILE" --wait --output-format json)"
    echo "$result"
    if ! "${UV_RUN[@]}" python -c 'import json, sys; sys.exit(json.loads(sys.argv[1]).get("status") != "Accepted")' "$result"; then
        echo "notarization of $1 was not accepted: xcrun notarytool log <id> --keychain-profile $CAIRN_NOTARY_PROFILE" >&2
        exit 1
    fi
}

if [[ -n "${CAIRN_SIGN_IDENTITY:-}" ]]; then
    echo "==> Signing with ${CAIRN_SIGN_IDENTITY}"
    # Notarization requires the hardened runtime (--options runtime) and a secure timestamp on
    # every piece of code in the bundle.
    sign() {
        codesign --force --timestamp --options runtime --sign "$CAIRN_SIGN_IDENTITY" "$@"
    }

    # Inside out, because signing a container seals the signatures of what it holds, and Apple
    # advises against `codesign --deep` for signing. First loose Mach-O files (Python extension
    # modules, dylibs, Qt plugins) that are not part of a framework...
    while IFS= read -r -d '' file; do
        if file -b "$file" | grep -q 'Mach-O'; then
            sign "$file"
        fi
    done < <(find "$APP/Contents" -type f ! -path '*.framework/*' ! -path "$APP/Contents/MacOS/*" -print0)

    # ...then each framework (the Qt ones) as a whole...
    while IFS= read -r -d '' framework; do
        sign "$framework"
    done < <(find "$APP/Contents" -type d -name '*.framework' -prune -print0)

    # ...and last the app, whose main executable is the only code that needs entitlements.
    sign --entitlements "$ENTITLEMENTS" "$APP"

    codesign --verify --deep --strict --verbose=2 "$APP"
else
    echo "==> CAIRN_SIGN_IDENTITY not set: leaving the ad-hoc signature (not for distribution)"
fi

if [[ -n "${CAIRN_NOTARY_PROFILE:-}" ]]; then
    # The app first: a person who copies it out of the dmg keeps a stapled, notarized app that
    # opens offline. notarytool takes a zip of it (ditto keeps the signatures).
    echo "==> Notarizing the app"
    ditto -c -k --sequesterRsrc --keepParent "$APP" "$STAGING/Cairn.zip"
    notarize "$STAGING/Cairn.zip"
    xcrun stapler staple "$APP"
    xcrun stapler validate "$APP"
    spctl --assess --type execute --verbose=2 "$APP"
fi

echo "==> Making ${DMG}"
# A folder holding the (stapled) app and an /Applications link gives the usual drag-to-install window.
mkdir "$STAGING/dmg"
# ditto keeps symlinks, extended attributes and signatures exactly as they are.
ditto "$APP" "$STAGING/dmg/Cairn.app"
ln -s /Applications "$STAGING/dmg/Applications"
rm -f "$DMG"
hdiutil create -volname "Cairn ${VERSION}" -srcfolder "$STAGING/dmg" -fs HFS+ -format UDZO -ov "$DMG"

if [[ -n "${CAIRN_SIGN_IDENTITY:-}" ]]; then
    # A signed dmg lets Gatekeeper check the container before the app inside is even opened.
    codesign --force --timestamp --sign "$CAIRN_SIGN_IDENTITY" "$DMG"
fi

if [[ -n "${CAIRN_NOTARY_PROFILE:-}" ]]; then
    echo "==> Notarizing the dmg"
    notarize "$DMG"
    # Stapling the ticket lets the dmg pass Gatekeeper offline.
    xcrun stapler staple "$DMG"
    xcrun stapler validate "$DMG"
    spctl --assess --type open --context context:primary-signature --verbose=2 "$DMG"
fi

echo "==> Done: ${APP}, ${DMG}"
