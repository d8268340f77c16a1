#!/usr/bin/env bash
# Build dist/Cairn.app and dist/Cairn-<version>.dmg on macOS.
#
#   packaging/build_macos.sh
#
# Optional environment:
#   CAIRN_SIGN_IDENTITY   "Developer ID Application: Name (TEAMID)" — sign with the hardened runtime.
#                         Unset: the app keeps PyInstaller's ad-hoc signature (runs locally only).
#   CAIRN_NOTARY_PROFILE  a `xcrun notarytool store-credentials` profile — notarize and staple the dmg.
#   CAIRN_BUILD_PYTHON    the Python to bundle (default 3.12).
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
# own environment and leaves the developer's .venv alone. --locked: build exactly what uv.lock
# pins, and fail if the lock is stale rather than resolve something new.
export UV_PROJECT_ENVIRONMENT="${UV_PROJECT_ENVIRONMENT:-build/venv}"
UV_RUN=(uv run --locked --python "${CAIRN_BUILD_PYTHON:-3.12}")

# pyproject.toml is the only place the version is written (tomllib needs the 3.11+ from uv;
# the system python3 may be older).
VERSION="$("${UV_RUN[@]}" python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
APP="dist/Cairn.app"
DMG="dist/Cairn-${VERSION}.dmg"
ENTITLEMENTS="packaging/entitlements.plist"

echo "==> Building Cairn ${VERSION}"
# PyInstaller is a build tool, not a dependency of the app: keep it out of uv.lock.
"${UV_RUN[@]}" --with "pyinstaller>=6.10" pyinstaller --noconfirm --clean packaging/cairn.spec

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

echo "==> Making ${DMG}"
# A folder holding the app and an /Applications link gives the usual drag-to-install window.
STAGING="$(mktemp -d)"
trap 'rm -rf "$STAGING"' EXIT
# ditto keeps symlinks, extended attributes and signatures exactly as they are.
ditto "$APP" "$STAGING/Cairn.app"
ln -s /Applications "$STAGING/Applications"
rm -f "$DMG"
hdiutil create -volname "Cairn ${VERSION}" -srcfolder "$STAGING" -fs HFS+ -format UDZO -ov "$DMG"

if [[ -n "${CAIRN_SIGN_IDENTITY:-}" ]]; then
    # A signed dmg lets Gatekeeper check the container before the app inside is even opened.
    codesign --force --timestamp --sign "$CAIRN_SIGN_IDENTITY" "$DMG"
fi

if [[ -n "${CAIRN_NOTARY_PROFILE:-}" ]]; then
    if [[ -z "${CAIRN_SIGN_IDENTITY:-}" ]]; then
        echo "CAIRN_NOTARY_PROFILE needs CAIRN_SIGN_IDENTITY: Apple notarizes only signed code" >&2
        exit 1
    fi
    echo "==> Notarizing"
    xcrun notarytool submit "$DMG" --keychain-profile "$CAIRN_NOTARY_PROFILE" --wait
    # Stapling the ticket lets the dmg pass Gatekeeper offline.
    xcrun stapler staple "$DMG"
fi

echo "==> Done: ${APP}, ${DMG}"
