#!/bin/sh
# Install the Debian packages the build and the tests need; do nothing when all
# are present. Runs as root, or through sudo.
set -e
PKGS="make gcc clang libclang-rt-14-dev nasm binutils grub-pc-bin grub-common xorriso \
qemu-system-x86 python3 coreutils clang-format"
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
