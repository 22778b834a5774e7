#!/bin/sh
# Assemble Debian 13's QEMU (trixie, 1:10.0.x) from Debian's packages into
# build/qemu-next/, beside the system's QEMU and with no change to the system:
# an apt state of its own (sources, lists, cache, status all under the folder),
# `apt-cache depends --recurse` for the package list, `apt-get download`,
# `dpkg -x` of each into one root. The wrapper build/qemu-next/qemu-system-x86_64
# runs that QEMU through the bundle's own loader and libraries, with its own
# firmware (-L) and modules (QEMU_MODULE_DIR: otherwise it would try the
# system's, "Only modules from the same build can be loaded"; QEMU looks there
# for every module it lacks, so the opengl and spice modules come too: about
# 140 packages, 180 MB, 20 s here).
#
#   scripts/qemu-next.sh [DIR]   (DIR: build/qemu-next; QEMU_NEXT_MIRROR=URL
#                                 overrides the mirror apt uses)
#
# Prints the wrapper's path and exits 0, or prints "skipped: <why>" and exits 2
# when the packages cannot be fetched.
set -u
cd "$(dirname "$0")/.."
DIR=${1:-build/qemu-next}
SUITE=trixie
mkdir -p "$DIR" && DIR=$(cd "$DIR" && pwd)
ROOT=$DIR/root
WRAPPER=$DIR/qemu-system-x86_64
skip() { echo "skipped: $*"; exit 2; }

if [ -x "$WRAPPER" ] && "$WRAPPER" --version >/dev/null 2>&1; then
    echo "$WRAPPER"
    exit 0
fi
command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
    skip "no apt-get/dpkg on this host"

# The mirror the host's apt already uses (deb.debian.org when none is found).
MIRROR=$(grep -rhoE 'https?://[^ ]*/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
    grep -v security | head -n 1 | tr -d ' ')
MIRROR=${QEMU_NEXT_MIRROR:-${MIRROR:-http://deb.debian.org/debian}}
APT=$DIR/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$DIR/debs"
: >"$APT/status"
echo "deb ${MIRROR%/} $SUITE main" >"$APT/sources.list"
set -- -o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache" -o Dir::State::Status="$APT/status" \
    -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"
apt-get "$@" -q update >"$DIR/apt-update.log" 2>&1 ||
    skip "apt-get update of $MIRROR $SUITE failed ($(tail -n 1 "$DIR/apt-update.log"))"
ls "$APT/lists/" | grep -q _Packages ||
    skip "no package list from $MIRROR $SUITE ($(grep -m1 -E '^(E|W):' "$DIR/apt-update.log"))"
# The essentials every Debian system has (and that a program run through the
# bundle's loader does not need) are left out.
PKGS=$(apt-cache "$@" depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances qemu-system-x86 qemu-system-modules-opengl qemu-system-modules-spice qemu-system-data seabios ipxe-qemu 2>/dev/null |
    grep -E '^[a-z0-9][a-z0-9.+-]*$' | sort -u |
    grep -vxE 'dpkg|debconf|systemd|systemd-.*|libsystemd-shared|coreutils|perl-base|bash|dash|sed|grep|base-files|base-passwd|adduser|passwd|login|init-system-helpers|debianutils|tar|gzip|util-linux|mount|libpam.*|procps|sensible-utils|ucf|python3.*|libpython3.*|media-types|tzdata|readline-common|install-info|lsb-base|sysvinit-utils|netbase|usr-is-merged')
[ -n "$PKGS" ] || skip "apt-cache found no qemu-system-x86 in $SUITE"
(cd "$DIR/debs" && apt-get "$@" -q download $PKGS) >"$DIR/apt-download.log" 2>&1 ||
    skip "apt-get download failed ($(grep -m1 -E '^E:' "$DIR/apt-download.log"))"
rm -rf "$ROOT" && mkdir -p "$ROOT"
for deb in "$DIR"/debs/*.deb; do dpkg -x "$deb" "$ROOT" || skip "dpkg -x $deb failed"; done
LIB=$ROOT/usr/lib/x86_64-linux-gnu
[ -x "$ROOT/usr/bin/qemu-system-x86_64" ] && [ -e "$LIB/ld-linux-x86-64.so.2" ] ||
    skip "the packages lack qemu-system-x86_64 or the loader"

cat >"$WRAPPER" <<WRAP
#!/bin/sh
# Debian 13's QEMU from $DIR/root (made by scripts/qemu-next.sh): its own
# loader, libraries, firmware and modules, nothing of the system's.
R=\$(cd "\$(dirname "\$0")" && pwd)/root
export QEMU_MODULE_DIR=\$R/usr/lib/x86_64-linux-gnu/qemu
exec "\$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "\$R/usr/lib/x86_64-linux-gnu" \\
    "\$R/usr/bin/qemu-system-x86_64" -L "\$R/usr/share/qemu" -L "\$R/usr/share/seabios" "\$@"
WRAP
chmod +x "$WRAPPER"
"$WRAPPER" --version >"$DIR/version.txt" 2>&1 || skip "the assembled QEMU does not run ($(head -n 1 "$DIR/version.txt"))"
echo "$WRAPPER"
