#!/usr/bin/env bash
# Compile installer.iss on Linux with Inno Setup's own command-line compiler (ISCC.exe) under
# wine, against the Linux bundle (dist/Cairn, built by check_bundle.sh when missing) with
# stand-in Windows executables for Cairn.exe and cairn.com. Passes when ISCC refuses to compile
# without a version and compiles with one with zero warnings. See packaging/README.md.
#
#   packaging/check_installer.sh
#   CAIRN_ISCC_COMPRESSION=lzma2/fast packaging/check_installer.sh   # quicker (default: the real lzma2/max)
#
# Installs what is missing: wine (Debian packages, 32-bit too: ISCC is a 32-bit program; needs
# root) and Inno Setup (npm package innosetup, into build/tools). Wine's files live in build/wine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

INNO_VERSION=6.4.1
ISCC="$ROOT/build/tools/innosetup/node_modules/innosetup/bin/ISCC.exe"
export WINEPREFIX="$ROOT/build/wine" WINEDEBUG=-all
# No Mono or Gecko: nothing here needs them, and wine would try to download them.
export WINEDLLOVERRIDES="mscoree=;mshtml="

install_wine() {
    if [[ "$(id -u)" != 0 ]]; then
        echo "check_installer.sh: wine with 32-bit support is missing; as root:" >&2
        echo "  dpkg --add-architecture i386 && apt-get update && apt-get install wine wine32:i386 wine64" >&2
        exit 1
    fi
    echo "==> Installing wine (Debian packages, with i386 for the 32-bit ISCC.exe)"
    dpkg --print-foreign-architectures | grep -qx i386 || dpkg --add-architecture i386
    apt-get update || echo "    (some package lists failed to download; going on with the others)"
    local packages=(wine wine32:i386 wine64)
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"; then
        # i386 and amd64 copies of a library must have the same version. When the security
        # archive's i386 list failed to download (seen: "File has unexpected size ... Mirror sync
        # in progress?"), its amd64 updates have no i386 twin: take both from the main archive.
        echo "    retrying from the main archive alone"
        local sources
        sources="$(mktemp -d)"
        sed -n '/^Types:/,/^$/{p}' /etc/apt/sources.list.d/debian.sources 2>/dev/null \
            | awk 'BEGIN{RS=""; ORS="\n\n"} !/security/' > "$sources/main.sources"
        [[ -s "$sources/main.sources" ]] || printf 'deb http://deb.debian.org/debian bookworm main\n' > "$sources/main.list"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$sources" "${packages[@]}"
        rm -rf "$sources"
    fi
}

command -v wine >/dev/null 2>&1 && [[ -e /usr/lib/i386-linux-gnu/wine ]] || install_wine
if [[ ! -f "$ISCC" ]]; then
    echo "==> Installing Inno Setup $INNO_VERSION (npm package innosetup)"
    npm install --prefix build/tools/innosetup --no-save --no-audit --no-fund --loglevel=error \
        "innosetup@$INNO_VERSION"
fi
if [[ ! -x dist/Cairn/Cairn ]]; then
    echo "==> No Linux bundle yet: building it"
    CAIRN_CHECK_ROUNDS=0 packaging/check_bundle.sh
fi

VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -n 1)"
FILE_VERSION="$(grep -oE '^[0-9]+(\.[0-9]+){0,3}' <<<"$VERSION")"

# The bundle as the installer packs it, minus the Linux executable, plus Windows stand-ins
# (wine's hostname.exe: any PE file does; ISCC packs it, never runs it). Hard links: no copy.
echo "==> Staging dist/Cairn with stand-in Cairn.exe and cairn.com"
wineboot --init >/dev/null 2>&1 || true
STAGE="build/installer-check"
rm -rf "$STAGE"
mkdir -p "$STAGE"
cp -al dist/Cairn "$STAGE/Cairn" 2>/dev/null || cp -a dist/Cairn "$STAGE/Cairn"
rm "$STAGE/Cairn/Cairn"
for exe in Cairn.exe cairn.com; do
    cp "$WINEPREFIX/drive_c/windows/system32/hostname.exe" "$STAGE/Cairn/$exe"
done

iscc() {
    wine "$ISCC" "/DBundleDir=${STAGE//\//\\}\\Cairn" "/O${STAGE//\//\\}\\out" "$@" installer.iss 2>&1 | tr -d '\r'
}

failed=0
echo "==> ISCC without a version must refuse"
if iscc > "$STAGE/no-version.log"; then
    echo "FAIL  compiled without /DAppVersion" >&2
    failed=1
elif grep -q "Pass the version from pyproject.toml" "$STAGE/no-version.log"; then
    echo "ok    refused: $(grep -m1 -o 'Pass the version[^:]*' "$STAGE/no-version.log")"
else
    echo "FAIL  refused, but not with the version error:" >&2
    tail -n 5 "$STAGE/no-version.log" >&2
    failed=1
fi

COMPRESSION="${CAIRN_ISCC_COMPRESSION:-lzma2/max}"
echo "==> ISCC /DAppVersion=$VERSION /DFileVersion=$FILE_VERSION (compression $COMPRESSION)"
start=$SECONDS
if iscc "/DAppVersion=$VERSION" "/DFileVersion=$FILE_VERSION" "/DCompression=$COMPRESSION" > "$STAGE/compile.log"; then
    warnings="$(grep -c '^ *Warning: ' "$STAGE/compile.log" || true)"
    setup="$STAGE/out/Cairn-$VERSION-setup.exe"
    if [[ "$warnings" == 0 && -f "$setup" ]]; then
        echo "ok    compiled with zero warnings in $((SECONDS - start)) s: $setup," \
             "$(( $(stat -c %s "$setup") / 1000000 )) MB (from a $(( $(du -sb "$STAGE/Cairn" | cut -f1) / 1000000 )) MB bundle)"
    else
        echo "FAIL  $warnings warning(s):" >&2
        grep '^ *Warning: ' "$STAGE/compile.log" >&2 || true
        failed=1
    fi
else
    echo "FAIL  ISCC failed:" >&2
    tail -n 20 "$STAGE/compile.log" >&2
    failed=1
fi
echo "    (ISCC's output: $STAGE/compile.log)"
exit "$failed"
