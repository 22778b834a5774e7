#!/usr/bin/env python3
"""Benchmarks that print figures (`make bench`); they never pass or fail on timing.

Figures (the notes column gives each one's target, where it has one):
  sample_stage_*  the instructions of one ProfileTime sample by stage, from the
      first instruction of the timer's entry to its iretq (tests/bench/sample-steps.py:
      QEMU's per-instruction execution log of the shipped kernel, no markers)
  sample_cost_1, sample_cost_256  guest instructions per ProfileTime sample with
      one started profile, and with 255 more that cannot match; measured by the
      `bench cost` program as the extra instructions of a fixed workload divided
      by the samples taken, under -icount shift=0,sleep=off on one CPU (the TSC
      then counts instructions exactly)
  overhead_1221/10000/78125  slowdown of that workload with one profile started
  cswitch_cost_0, cswitch_cost_4, cswitch_cost_offcpu  guest instructions per
      context switch (a yield each way, -smp 1, icount) with nothing started,
      with 4 software counters, and with profile record --off-cpu's PMC
  callchain_cost_16  guest instructions per sample of a sampling PMC with call
      chains (profile record -g) over a workload 16 user frames deep: the
      interrupt, the walk and the log record (`bench callchain 16`, icount)
  nmi_sample_cost_1, nmi_callchain_cost_16  the same two measurements in a boot
      with profile_nmi=1, where ProfileTime arrives as an NMI (docs/nmi.md):
      the NMI's entry, dispatcher and timer handler instead of the maskable
      timer's; the note gives the ratio to the maskable figure (goal <= 1.5 x)
  startstop_ipis_process, startstop_cost_16, startstop_cost_1  cross-CPU call
      interrupts, and guest instructions of every CPU, per NtStartProfile +
      NtStopProfile of a profile of a process that is not running (`bench
      startstop`, icount), on -smp 16 and on -smp 1
  start_cost_1, start_cost_8192  guest instructions of one NtStartProfile of a
      process that is not running (`bench start 8192`, icount, -smp 2: the
      limit is 8,192 per CPU): its first profile, and one more when 8,192 are
      started on it over distinct small ranges; the fewest of 8 tries each
      (the notes give the NtStopProfile that follows each, measured alike)
  smp_lost_samples_16  smp_lost_samples on -smp 16
  smp_lost_samples  buckets + out-of-range - delivered, one system profile on
      -smp 4 at 1,221 while every CPU spins (TCG, real concurrency)
  attribution_error  worst error in percentage points of `profile run calib`
      against its 50/30/20 split, under icount
  boot_ratio  wall time from QEMU start to the end of kernel init for
      build/os.iso on -smp 4 under TCG, divided by the time a bare multiboot2
      "hello" ISO takes to print its first line, median of 5 each
  export_mb_s, export_mb_s_serial, record_smp16_lost, record_max_samples,
      convert_samples_s  recordings out of the guest, to the host's file and
      the serial fallback, and their conversion (tests/bench/host_recording.py)
  linux_*  with BENCH_PEERS=1 only: the same workloads sampled by Linux's perf
      in the same emulator (`make bench-peers`, tests/bench/peers/peers.py,
      docs/bench-peers.md), appended to build/bench.md
"""
import os, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from qemuenv import QEMU as QEMU_BIN, ICOUNT_ARGS  # noqa: E402  (scripts/qemu.sh)
import host_recording  # noqa: E402  (tests/bench/host_recording.py)

QEMU = [QEMU_BIN, "-machine", "pc", "-cpu", "max", "-boot", "d", "-no-reboot",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-display", "none",
        "-monitor", "none", "-serial", "stdio"]


def time_to_line(iso, marker, smp, runs=5):
    times = []
    for _ in range(runs):
        start = time.monotonic()
        p = subprocess.Popen(QEMU + ["-smp", str(smp), "-m", "256M", "-cdrom", iso],
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        seen = None
        for raw in p.stdout:
            if marker in raw:
                seen = time.monotonic() - start
                break
        p.kill()
        p.wait()
        if seen is None:
            sys.exit(f"bench: {iso} never printed {marker!r}")
        times.append(seen)
    return statistics.median(times), times


ICOUNT = ICOUNT_ARGS  # -cpu max,-x2apic too: scripts/qemu.sh says why


def run_init(args, smp, extra=(), timeout=600, options=""):
    """Boot PROG,ARGS as init (test=init) and return its serial output;
    options: more kernel options in the ISO's name ("+profile_nmi~1")."""
    iso = "build/tests/init+init~" + ",".join(args) + options + ".iso"
    subprocess.run(["make", "-s", iso], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run(QEMU + ["-smp", str(smp), "-m", "256M", "-cdrom", iso] + list(extra),
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, timeout=timeout)
    return out.stdout.decode(errors="replace")


def figure(text, name):
    m = re.search(r"^bench: " + re.escape(name) + r" (\S+) (.+?)\s*$", text, re.M)
    if not m:
        sys.exit(f"bench: no figure {name} in:\n{text}")
    return m.group(1), m.group(2)


# The stages of one sample before the lean timer entry and the per-CPU lookup
# cache (the kernel as of the first release of the profile objects), measured
# by the same method, for the before/after table.
STAGES_BEFORE = {"entry": 24, "dispatch": 33, "timer": 111, "hal": 22, "ke_lookup": 94,
                 "bucket": 14, "rearm": 26, "eoi": 4, "return_to_user": 9, "exit": 20}


def stage_figures():
    run = subprocess.run([sys.executable, "tests/bench/sample-steps.py"], stdout=subprocess.PIPE,
                         text=True, timeout=1200)
    out = run.stdout
    print(out, end="")
    if run.returncode != 0 or not re.search(r"^bench: sample_steps_total ", out, re.M):
        # No stage is "gone" when the tracer did not run: say it failed.
        print(f"bench: sample steps: the tracer failed (exit status {run.returncode})")
        return [("sample_steps_total", "-", "instructions", "the tracer failed: no stages")]
    rows = []
    for m in re.finditer(r"^bench: sample_stage_(\S+) (\d+) instructions$", out, re.M):
        before = STAGES_BEFORE.get(m.group(1))
        rows.append((f"sample_stage_{m.group(1)}", m.group(2), "instructions",
                     f"before: {before}" if before is not None else ""))
    for name in set(STAGES_BEFORE) - {r[0][len("sample_stage_"):] for r in rows}:
        rows.append((f"sample_stage_{name}", "0", "instructions",
                     f"before: {STAGES_BEFORE[name]} (stage gone)"))
    total = re.search(r"^bench: sample_steps_total (\d+)", out, re.M)
    if total:
        rows.append(("sample_steps_total", total.group(1), "instructions",
                     f"before: {sum(STAGES_BEFORE.values())}"))
    return rows


def main():
    figures = stage_figures()
    c1, unit = figure(run_init(["bench", "cost", "1"], 1, ICOUNT), "sample_cost_1")
    figures.append(("sample_cost_1", c1, unit, "before: 357, target <= 120"))
    c256, unit = figure(run_init(["bench", "cost", "256"], 1, ICOUNT), "sample_cost_256")
    figures.append(("sample_cost_256", c256, unit,
                    f"{int(c256) / int(c1):.2f} x sample_cost_1, target <= 1.1 x"))
    for interval in (1221, 10000, 78125):
        v, unit = figure(run_init(["bench", "overhead", str(interval)], 1, ICOUNT),
                         f"overhead_{interval}")
        figures.append((f"overhead_{interval}", v, unit.replace("%", "%").strip(),
                        "target <= 0.5" if interval == 1221 else ""))
    text = run_init(["bench", "callchain", "16"], 1, ICOUNT)
    c0, unit = figure(text, "callchain_cost_0")
    c16, unit = figure(text, "callchain_cost_16")
    figures.append(("callchain_cost_16", c16, unit,
                    f"16 user frames, before: 675, target <= 400; {c0} without the chain"))
    nmi = "+profile_nmi~1"
    n1, unit = figure(run_init(["bench", "cost", "1"], 1, ICOUNT, options=nmi), "nmi_sample_cost_1")
    figures.append(("nmi_sample_cost_1", n1, unit,
                    f"ProfileTime as NMI, {int(n1) / int(c1):.2f} x sample_cost_1, goal <= 1.5 x"))
    text = run_init(["bench", "callchain", "16"], 1, ICOUNT, options=nmi)
    n0, unit = figure(text, "nmi_callchain_cost_0")
    n16, unit = figure(text, "nmi_callchain_cost_16")
    figures.append(("nmi_callchain_cost_16", n16, unit,
                    f"ProfileTime as NMI, 16 user frames, {int(n16) / int(c16):.2f} x "
                    f"callchain_cost_16; {n0} without the chain"))
    cs0, unit = figure(run_init(["bench", "cswitch", "0"], 1, ICOUNT), "cswitch_cost_0")
    figures.append(("cswitch_cost_0", cs0, unit, "a yield each way, -smp 1"))
    cs4, unit = figure(run_init(["bench", "cswitch", "4"], 1, ICOUNT), "cswitch_cost_4")
    figures.append(("cswitch_cost_4", cs4, unit,
                    f"{int(cs4) / int(cs0):.2f} x cswitch_cost_0 with 4 software counters, "
                    "target <= 1.15 x"))
    cso, unit = figure(run_init(["bench", "cswitch", "offcpu"], 1, ICOUNT), "cswitch_cost_offcpu")
    figures.append(("cswitch_cost_offcpu", cso, unit,
                    f"{int(cso) / int(cs0):.2f} x cswitch_cost_0 with profile record --off-cpu "
                    "(a chain and a reason at each switch-out, the time away at each switch-in)"))
    lost, unit = figure(run_init(["bench", "smp"], 4), "smp_lost_samples")
    figures.append(("smp_lost_samples", lost, unit, "-smp 4, target 0"))
    lost, unit = figure(run_init(["bench", "smp"], 16, timeout=1200), "smp_lost_samples")
    figures.append(("smp_lost_samples_16", lost, unit, "-smp 16, goal 0"))
    text = run_init(["bench", "startstop", "500"], 16, ICOUNT)
    ipis, unit = figure(text, "startstop_ipis_process")
    ss16, unit16 = figure(text, "startstop_cost_16")
    ss1, _ = figure(run_init(["bench", "startstop", "500"], 1, ICOUNT), "startstop_cost_1")
    figures.append(("startstop_ipis_process", ipis, "interrupts",
                    "per NtStartProfile + NtStopProfile of a process not running, -smp 16, goal 0"))
    figures.append(("startstop_cost_16", ss16, unit16,
                    f"{int(ss16) / int(ss1):.2f} x startstop_cost_1, goal <= 1.2"))
    figures.append(("startstop_cost_1", ss1, unit16, "the same pair on -smp 1"))
    text = run_init(["bench", "start", "8192"], 2, ICOUNT, timeout=1200)
    st1, unit = figure(text, "start_cost_1")
    st8k, _ = figure(text, "start_cost_8192")
    sp1, _ = figure(text, "stop_cost_1")
    sp8k, _ = figure(text, "stop_cost_8192")
    figures.append(("start_cost_1", st1, unit,
                    f"the first NtStartProfile of a process not running, -smp 2 (its stop: {sp1})"))
    figures.append(("start_cost_8192", st8k, unit,
                    f"{int(st8k) / int(st1):.2f} x start_cost_1 with 8,192 started on the "
                    f"process, target <= 4 x (its stop: {sp8k})"))
    hello, _ = time_to_line("build/bench/hello.iso", b"hello", 4)
    osb, _ = time_to_line("build/os.iso", b"boot: kernel init took", 4)
    figures.append(("boot_hello", f"{hello:.3f}", "s", "reference"))
    figures.append(("boot_os", f"{osb:.3f}", "s", "-smp 4, TCG"))
    figures.append(("boot_ratio", f"{osb / hello:.2f}", "x", "target <= 1.6"))
    attribution = attribution_error()
    if attribution:
        figures.append(attribution)
        figures.append(attribution_tcg())
    figures += host_recording.figures()  # export_mb_s, record_smp16_lost, record_max_samples, convert_samples_s
    for name, value, unit, _ in figures:
        print(f"bench: {name} {value} {unit}")
    table = ["| figure | value | unit | note |", "|---|---|---|---|"]
    table += [f"| {n} | {v} | {u} | {t} |" for n, v, u, t in figures]
    print("\n".join(table))
    os.makedirs("build", exist_ok=True)
    with open("build/bench.md", "w") as f:
        f.write("\n".join(table) + "\n")
    if os.environ.get("BENCH_PEERS") == "1":
        subprocess.run([sys.executable, "tests/bench/peers/peers.py"], check=True)


def calib_error(text):
    """(worst error in points against 50/30/20, hits) of a calib report."""
    shares = {}
    for name in ("calib_a", "calib_b", "calib_c"):
        m = re.search(r"^\s*" + name + r"\s+(\d+)\s+([\d.]+)", text, re.M)
        if not m:
            sys.exit(f"bench: no {name} row in the profile report:\n{text}")
        shares[name] = (int(m.group(1)), float(m.group(2)))
    hits = sum(h for h, _ in shares.values())
    expect = {"calib_a": 50.0, "calib_b": 30.0, "calib_c": 20.0}
    return max(abs(100.0 * shares[n][0] / hits - expect[n]) for n in expect), hits


def attribution_error():
    """Worst error of `profile run calib` against 50/30/20, under icount."""
    if not os.path.exists("userland/bin/profile"):
        return None
    text = run_init(["profile", "run", "-n", "8", "calib", "600000000"], 1, ICOUNT, timeout=1200)
    worst, hits = calib_error(text)
    return ("attribution_error", f"{worst:.2f}", "pp", f"{hits} samples in calib, target <= 1.0")


def attribution_tcg(runs=5):
    """The same without icount on -smp 2 at the finest interval: real time
    under TCG, where the guest's clock and the host's scheduling decide where
    ticks land. Worst and median error over several runs."""
    errors = []
    for _ in range(runs):
        text = run_init(["profile", "run", "-i", "1221", "calib"], 2, (), timeout=600)
        errors.append(calib_error(text)[0])
    errors.sort()
    return ("attribution_error_tcg", f"{errors[-1]:.2f}", "pp",
            f"worst of {runs} runs, -smp 2, no icount (median {errors[len(errors) // 2]:.2f}), "
            "target <= 5")


if __name__ == "__main__":
    main()
