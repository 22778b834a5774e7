#!/bin/sh
# Install the Debian packages the build and the tests need; do nothing when all
# are present. Runs as root, or through sudo.
#
#   scripts/deps.sh            the build, QEMU and the tests' tools
#   scripts/deps.sh pictures   also Node.js and npm (the flame-graph pages' renderer)
#   scripts/deps.sh browser    also Debian's chromium (the pages' browser test)
#   scripts/deps.sh perf       also Debian's perf and python3-jsonschema (perf.data, speedscope checks)
#   scripts/deps.sh hotspot    also Debian's hotspot (its parser reads perf.data in the checks)
set -e
PKGS="make gcc clang libclang-rt-14-dev nasm binutils grub-pc-bin grub-common xorriso \
qemu-system-x86 python3 coreutils clang-format mtools ovmf grub-efi-amd64-bin"
for group in "$@"; do
    case "$group" in
        # Any Node.js with npm will do (the machine may have one that is not Debian's).
        pictures) command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
            PKGS="$PKGS nodejs npm" ;;
        browser) PKGS="$PKGS chromium" ;;
        perf) PKGS="$PKGS linux-perf python3-jsonschema" ;;
        hotspot) PKGS="$PKGS hotspot" ;;
        *) echo "deps: unknown group '$group'" >&2; exit 2 ;;
    esac
done
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null || true
$SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null
echo "deps: done"
