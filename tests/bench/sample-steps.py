#!/usr/bin/env python3
"""Every instruction of a ProfileTime sample, counted by stage (`make bench`).

Boots `bench overhead 1221` (one started profile over the program's text) on one
CPU under -icount shift=0,sleep=off with QEMU logging each executed instruction
(one instruction per block, -d exec,nochain) of the functions a timer interrupt can run
(timer_entry and what it calls, found by following the direct calls in the
kernel's disassembly, plus the two registered slot functions), and nothing
else: -dfilter keeps the log small and the guest's timing is untouched (icount
counts instructions, not host time). The kernel measured is the kernel that
ships: no marker, no instrumentation.

An interrupt is the run of logged instructions from timer_entry to its iretq.
Those that delivered a ProfileTime sample and no scheduler tick are the
samples measured; each instruction is put in the stage its source belongs to
(addr2line -i: the innermost inlined function that names a stage, else the
file of the outermost one). Prints `bench: sample_stage_<stage> N instructions`
for the median sample and `bench: sample_steps_total N instructions`.

With --nmi the kernel is booted with profile_nmi=1 and the interrupt is the
NMI's: from nmi_entry through nmi_dispatch and the timer's NMI handler to its
iretq; the figures are then named nmi_sample_stage_* and nmi_sample_steps_total.

Usage: tests/bench/sample-steps.py [--nmi] [--iso ISO] [--trace FILE]
  (ISO: another boot's samples, e.g. `bench callchain 16`'s; FILE: the median sample, annotated)
"""
import os, re, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from qemuenv import QEMU, ICOUNT_ARGS  # noqa: E402  (scripts/qemu.sh)

KERNEL = "build/kernel.elf"
ISO = "build/tests/init+init~bench,overhead,1221.iso"
ROOTS = ["timer_entry", "timer_interrupt", "profile_time_tick", "KeProfileInterruptWithSource"]
ENTRY = "timer_entry"  # the assembly entry: an interrupt runs from it to its iretq
PREFIX = ""  # of the figures' names
if "--nmi" in sys.argv:
    ISO = "build/tests/init+init~bench,overhead,1221+profile_nmi~1.iso"
    ROOTS = ["nmi_entry", "nmi_dispatch", "timer_nmi_handler", "profile_time_tick",
             "KeProfileInterruptWithSource"]
    ENTRY, PREFIX = "nmi_entry", "nmi_"
if "--iso" in sys.argv:  # another workload's samples (the trace of one, say)
    ISO = sys.argv[sys.argv.index("--iso") + 1]
# Slow paths a sample does not take (and whose instructions would swamp the
# log): rescheduling, tracing while `pmc trace` is on, panics.
NOT_FOLLOWED = {"sched_user_return_slow", "pmc_trace_record", "panic", "panic_trap"}
MARKERS = ["sched_timer"]  # logged only to recognise interrupts that ran a scheduler tick

# (stage, innermost-inlined function names that mark it)
BY_FUNCTION = [
    ("bucket", {"count_bucket"}),
    ("eoi", {"lapic_eoi", "eoi_xapic", "eoi_x2apic"}),
    ("rearm", {"rearm_and_eoi", "lapic_count"}),
    ("return_to_user", {"trap_return_to_user"}),
]
# (stage, file path fragment of the outermost function)
BY_FILE = [("ke_lookup", "pmc/ke/"), ("ke_lookup", "pmc/hwpmc/"), ("hal", "pmc/hal/"), ("timer", "")]
ORDER = ["entry", "timer", "hal", "ke_lookup", "bucket", "rearm", "eoi", "return_to_user", "exit"]


def symbols():
    out = subprocess.run(["nm", "-S", KERNEL], stdout=subprocess.PIPE, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
        elif len(f) == 3:
            syms.setdefault(f[2], (int(f[0], 16), 0))
    return syms


def callees():
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", KERNEL],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    calls, cur = {}, None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:", line)
        if m:
            cur = m.group(1)
            calls[cur] = set()
        elif cur and re.search(r"\t(call|jmp)", line):
            m = re.search(r"<([^+>]+)", line)
            if m and m.group(1) != cur:
                calls[cur].add(m.group(1))
    return calls


def entry_size(syms):
    """The entry's bytes: up to the next symbol after it (not its local labels)."""
    start = syms[ENTRY][0]
    return min(a for n, (a, _) in syms.items()
               if a > start and not n.startswith(ENTRY + ".")) - start


def filter_ranges(syms):
    calls = callees()
    seen, todo = set(), list(ROOTS)
    while todo:
        f = todo.pop()
        if f in seen or f in NOT_FOLLOWED or f not in calls:
            continue
        seen.add(f)
        todo.extend(calls[f])
    seen |= set(MARKERS)
    ranges = []
    for f in sorted(seen):
        start, size = syms[f]
        if f == ENTRY:
            size = entry_size(syms)  # an assembly label: no size in the symbol table
        ranges.append(f"0x{start:x}+0x{size:x}")
    return ",".join(ranges)


def one_insn_per_tb():
    """One guest instruction per translation block, so that -d exec logs each:
    -singlestep until QEMU 8.0, -accel tcg,one-insn-per-tb=on from 8.1 (which
    QEMU 10 requires: -singlestep is gone)."""
    out = subprocess.run([QEMU, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    if m and (int(m.group(1)), int(m.group(2))) >= (8, 1):
        return ["-accel", "tcg,one-insn-per-tb=on"]
    return ["-singlestep"]


def run(ranges, log):
    subprocess.run(["timeout", "600", QEMU, "-machine", "pc", "-cpu", "max",
                    "-boot", "d", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                    "-display", "none", "-monitor", "none", "-serial", "null", "-smp", "1",
                    "-m", "256M", "-cdrom", ISO] + ICOUNT_ARGS + one_insn_per_tb() +
                   ["-d", "exec,nochain", "-dfilter", ranges, "-D", log],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pcs = []
    with open(log) as f:
        for line in f:
            m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
            # An I/O instruction under icount ends its translation block and
            # runs again in a new one: the log shows it twice, the guest
            # executed it once (no instruction here repeats itself).
            if m and (not pcs or pcs[-1] != int(m.group(1), 16)):
                pcs.append(int(m.group(1), 16))
    return pcs


def interrupts(pcs, syms):
    """Split the log into interrupts, each from the entry to an iretq of it."""
    entry = syms[ENTRY][0]
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", KERNEL,
                          f"--start-address=0x{entry:x}",
                          f"--stop-address=0x{entry + entry_size(syms):x}"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    irets = {int(line.split(":")[0], 16) for line in dis.splitlines() if "iretq" in line}
    runs, cur = [], None
    for p in pcs:
        if p == entry:
            cur = []
        if cur is not None:
            cur.append(p)
            if p in irets:
                runs.append(cur)
                cur = None
    return runs


def where(pcs):
    """{pc: (inline chain innermost first, file of the outermost function)}."""
    uniq = sorted(set(pcs))
    out = subprocess.run(["addr2line", "-f", "-i", "-a", "-e", KERNEL] + [f"{p:x}" for p in uniq],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()
    res, i = {}, 0
    while i < len(out):
        pc = int(out[i], 16)
        i += 1
        chain = []
        while i + 1 < len(out) and not re.match(r"^0x[0-9a-f]+$", out[i]):
            chain.append((out[i], out[i + 1].split(":")[0]))
            i += 2
        res[pc] = chain
    return res


def stage_of(chain):
    names = [fn for fn, _ in chain]
    for stage, fns in BY_FUNCTION:
        if any(n in fns for n in names):
            return stage
    outer_file = chain[-1][1] if chain else ""
    for stage, frag in BY_FILE:
        if frag in outer_file:
            return stage
    return "timer"


def main():
    trace_out = sys.argv[sys.argv.index("--trace") + 1] if "--trace" in sys.argv else None
    subprocess.run(["make", "-s", KERNEL, ISO], check=True)  # before its symbols are read
    syms = symbols()
    log = os.path.join(tempfile.mkdtemp(prefix="sample-steps."), "exec.log")
    pcs = run(filter_ranges(syms), log)
    ke, sched = syms["KeProfileInterruptWithSource"][0], syms["sched_timer"][0]
    samples = [r for r in interrupts(pcs, syms) if ke in r and sched not in r]
    if not samples:
        sys.exit("sample-steps: no interrupt delivered a ProfileTime sample alone")
    samples.sort(key=len)
    median = samples[len(samples) // 2]
    loc = where(median)
    counts = {s: 0 for s in ORDER}
    c_idx = [i for i, p in enumerate(median) if loc[p] and not loc[p][-1][1].endswith(".asm")]
    lines = []
    for i, p in enumerate(median):
        if i < c_idx[0]:
            stage = "entry"
        elif i > c_idx[-1]:
            stage = "exit"
        else:
            stage = stage_of(loc[p])
        counts[stage] += 1
        lines.append(f"{p:x} {stage:15} {' < '.join(fn for fn, _ in loc[p])}")
    if trace_out:
        with open(trace_out, "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"bench: {PREFIX}sample_steps_samples {len(samples)} interrupts "
          f"(min {len(samples[0])}, median {len(median)}, max {len(samples[-1])})")
    for s in ORDER:
        print(f"bench: {PREFIX}sample_stage_{s} {counts[s]} instructions")
    print(f"bench: {PREFIX}sample_steps_total {len(median)} instructions")


if __name__ == "__main__":
    main()
