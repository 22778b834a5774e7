# The emulator and the CPU model of every QEMU run, in one place: sourced by
# the test scripts (`. scripts/qemu.sh`), read by the Makefile and by the
# Python scripts (scripts/qemuenv.py). Plain assignments only, one a line.
#
# QEMU: the emulator, `qemu-system-x86_64` unless the environment says
# otherwise (`make test QEMU=build/qemu-next/qemu-system-x86_64`: QEMU 10).
QEMU=${QEMU:-qemu-system-x86_64}
#
# ICOUNT_CPU: the CPU model of runs under -icount: `max` without x2APIC, so
# the LAPIC is reached by MMIO. Runs without icount keep `-cpu max`, which
# offers x2APIC on QEMU >= 8.1's TCG (7.2's has none). Why: QEMU's TCG
# translates rdmsr/wrmsr without translator_io_start() (target/i386/tcg/
# translate.c, `case 0x130`/`case 0x132`, unlike rdtsc just below), while the
# x2APIC timer registers behind those MSRs read the virtual clock
# (hw/intc/apic.c: apic_get_current_count, the initial-count write's
# qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)), which under icount is
# icount_get_raw_locked() (accel/tcg/icount-common.c): it exits with
# "Bad icount read" when the CPU may not do I/O there. An xAPIC MMIO access
# is an I/O access, allowed. So with x2APIC every icount run aborts right
# after the kernel's `lapic: x2APIC mode` line.
ICOUNT_CPU="-cpu max,-x2apic"
# ICOUNT_ARGS: what a run under icount adds after its other options (a later
# -cpu replaces an earlier one): guest time counts instructions.
ICOUNT_ARGS="$ICOUNT_CPU -icount shift=0,sleep=off"
#
# HOST_DEVICE: the virtio console `profile record --host` writes to
# (kernel/dev/virtio_console.c), a transitional virtio-serial device whose
# port 0 goes to the chardev `recording`; a run names that chardev's file
# beside it: `-chardev file,id=recording,path=FILE` (the host's recording,
# growing while the guest writes; append=on keeps what an earlier boot wrote).
HOST_DEVICE="-device virtio-serial-pci -device virtconsole,chardev=recording"
