#!/bin/sh
# Print the QEMU accelerator arguments for `make run`: KVM with the host CPU
# (real performance counters) when KVM really runs this kernel, otherwise TCG
# with `-cpu max`. The reason goes to stderr.
#
# /dev/kvm existing is not enough: some hosts expose a KVM that cannot run a
# plain kernel (QEMU aborts setting an MSR, or the guest dies on its first
# exception). So boot build/tests/probe.iso under KVM and require the kernel's
# own success exit (status 33) within a few seconds.
. "$(dirname "$0")/qemu.sh" # QEMU
ISO=${1:-build/tests/probe.iso}
why=""
if [ ! -e /dev/kvm ]; then
    why="no /dev/kvm"
elif [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    why="/dev/kvm is not accessible to $(id -un)"
elif [ ! -f "$ISO" ]; then
    why="probe image $ISO missing"
else
    log=$(mktemp)
    timeout 20 "$QEMU" -enable-kvm -cpu host -machine pc -boot d -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -display none -monitor none \
        -serial "file:$log" -smp 1 -m 64M -cdrom "$ISO" </dev/null >"$log.err" 2>&1
    rc=$?
    if [ $rc -eq 33 ] && grep -q '^probe: booted' "$log"; then
        rm -f "$log" "$log.err"
        echo "accel: KVM works: -enable-kvm -cpu host" >&2
        echo "-enable-kvm -cpu host"
        exit 0
    fi
    detail=$(grep -m1 -i 'error\|fail' "$log.err" | cut -c1-100)
    [ $rc -eq 124 ] && detail="probe boot timed out"
    why="KVM probe boot failed (status $rc${detail:+: $detail})"
    rm -f "$log" "$log.err"
fi
echo "accel: TCG (software CPU, no PMU), -cpu max: $why" >&2
echo "-cpu max"
