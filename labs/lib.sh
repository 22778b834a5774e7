# The helpers the labs' graded tests share (sourced by labs/*/check).
# Each prints why it failed; boot prints a kernel panic's line.
cd "$(dirname "$0")/../.." || exit 1
. scripts/qemu.sh # QEMU, ICOUNT_ARGS
QEMU_OK=33        # isa-debug-exit: (0x10 << 1) | 1
OUT=${GRADE_OUT:-build/grade/by-hand} # scripts/labs/grade: a fresh folder per grade
mkdir -p "$OUT"

# build TARGET...: make's targets, quietly; on failure the errors, and exit 1.
build() {
    make -s "$@" >"$OUT/build.log" 2>&1 || { grep -m5 -E 'error|Error' "$OUT/build.log"; exit 1; }
}

# boot LOG ISO SMP [qemu args...]: boots ISO (stdin is its serial input) into
# LOG; sets rc to QEMU's status (33: the test's init passed; 0: poweroff;
# 124: timeout). A panic's line is printed.
boot() {
    local log=$1 iso=$2 smp=$3
    shift 3
    build "$iso"
    timeout --foreground "${BOOT_SECONDS:-150}" "$QEMU" -machine pc -cpu max -boot d -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -display none -monitor none \
        -serial stdio -smp "$smp" -m 256M -cdrom "$iso" "$@" 2>&1 | tr -d '\r' >"$log"
    rc=${PIPESTATUS[0]}
    grep -m1 -i 'panic' "$log" && echo "the kernel panicked: see $log"
    return 0
}

# section LOG CMD: the output of the shell command CMD in LOG, from its prompt
# line to the next prompt.
section() {
    awk -v cmd="sh\$ $2" '/^sh\$ / { if (on) exit; on = ($0 == cmd) } on' "$1"
}

# tap_ok LOG PATTERN: every KTAP line of LOG matching PATTERN is "ok", and
# at least one matches.
tap_ok() {
    local lines
    lines=$(grep -E '^(not )?ok ' "$1" | grep -E -- "$2")
    [ -n "$lines" ] || { echo "no test line matches '$2' in $1"; return 1; }
    grep '^not ok' <<<"$lines" && return 1
    echo "$(wc -l <<<"$lines") lines ok"
}

# near WHAT GOT WANT SLACK: GOT (hundredths) within SLACK points of WANT (%).
near() {
    local d=$(($2 > $3 * 100 ? $2 - $3 * 100 : $3 * 100 - $2))
    echo "$1: $(($2 / 100)).$(printf %02d $(($2 % 100)))%, want $3% +- $4"
    [ "$d" -le $(($4 * 100)) ]
}
