#!/usr/bin/env python3
"""The figures of recordings that leave the guest (`make bench` prints them
with the others; run alone, this prints these only):

  export_mb_s  MB/s of recording from the guest's /tmp to the host's file
      through the virtio console (`profile report --host` of a system-wide
      -g recording, TCG -smp 4; the guest's own clock, which under TCG
      without icount follows the host's)
  export_mb_s_serial  the same for the serial fallback: `profile report
      --export` of a 2-second system-wide -g recording, MB of the recording (not of its
      text) over the seconds between the export's first and last line on the
      host
  record_smp16_lost  samples lost in `profile record --host -g -a 10` on
      -smp 16 (TCG): the drain streaming to the host must keep up; the note
      says whether the host file holds every sample the guest logged
  record_max_samples  the largest recording made here: `profile record
      --host -g -a SECONDS` on -smp 16, SECONDS from BENCH_RECORD_SECONDS
      (default 300), read back whole on the host
  convert_samples_s  samples per second of one host core (CPU time) turning
      that recording into perf.data (reading it included); the note gives
      folded and speedscope, the distinct chains and the peak memory
"""
import os
import re
import resource
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "profview"))
import perfdata  # noqa: E402
import profdata  # noqa: E402
import recording  # noqa: E402
import speedscope  # noqa: E402
from qemuenv import QEMU, host_recording  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench", "recording")


def session(name, smp, commands, timeout):
    """Boots the shell ISO on -smp SMP (TCG -cpu max) with the host's file
    OUT/NAME.bin, types COMMANDS and poweroff; returns the console's lines,
    each with the host's monotonic time it arrived, and the file's path."""
    rec = os.path.join(OUT, name + ".bin")
    if os.path.exists(rec):
        os.unlink(rec)
    cmd = [QEMU, "-machine", "pc", "-cpu", "max", "-boot", "d", "-no-reboot", "-device",
           "isa-debug-exit,iobase=0xf4,iosize=0x04", "-display", "none", "-monitor", "none", "-serial", "stdio",
           "-smp", str(smp), "-m", "512M", "-cdrom", os.path.join(ROOT, "build", "tests", "shell.iso")]
    proc = subprocess.Popen(cmd + host_recording(rec), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    lines = []

    def read():
        for raw in proc.stdout:
            lines.append((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")))

    reader = threading.Thread(target=read)
    reader.start()
    proc.stdin.write("".join(c + "\n" for c in commands + ["poweroff"]).encode())
    proc.stdin.flush()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        print("bench: recording: %s timed out after %d s" % (name, timeout), file=sys.stderr)
    reader.join()
    with open(os.path.join(OUT, name + ".log"), "w") as f:
        f.write("\n".join(l for _, l in lines) + "\n")
    return lines, rec


def after(lines, cmd):
    """The lines of CMD's output (from its prompt to the next)."""
    out, on = [], False
    for t, line in lines:
        if line.startswith("sh$ "):
            if on:
                break
            on = line == "sh$ " + cmd
        if on:
            out.append((t, line))
    return out


def record_line(lines, cmd):
    """(samples logged, lost, bytes) from `profile record`'s summary, or None."""
    for _, line in after(lines, cmd):
        m = re.search(r": (\d+) samples logged, (\d+) lost, \d+ truncated chains, (\d+) bytes in", line)
        if m:
            return tuple(int(x) for x in m.groups())
    return None


def export_figures():
    small, large = "sudo profile record -g -a 2", "sudo profile record -g -a 10"
    lines, _ = session("export", 4, [small, "sudo profile report --export", "sudo profile report --host", large,
                                     "sudo profile report --host"], 900)
    rows = []
    hosts = [l for _, l in lines if l.startswith("report: /tmp/pmc.log: ")]
    rates = [re.search(r": (\d+) bytes to the host's file in (\d+) us", l).groups() for l in hosts]
    if len(rates) == 2:
        size, us = (int(x) for x in rates[1])
        rows.append(("export_mb_s", "%.1f" % (size / us), "MB/s",
                     "virtio console, %.1f MB system-wide -g recording, TCG -smp 4 (a %d KB one: %.1f MB/s); "
                     "goal >= 20" % (size / 1e6, int(rates[0][0]) // 1000, int(rates[0][0]) / int(rates[0][1]))))
    out = after(lines, "sudo profile report --export")
    marks = [t for t, l in out if l.strip() in (profdata.EXPORT_BEGIN, profdata.EXPORT_END)]
    small_rec = record_line(lines, small)
    if len(marks) == 2 and small_rec:
        rows.append(("export_mb_s_serial", "%.3f" % (small_rec[2] / (marks[1] - marks[0]) / 1e6), "MB/s",
                     "serial fallback (profile report --export), a %d KB recording in %.1f s" %
                     (small_rec[2] // 1000, marks[1] - marks[0])))
    return rows


def smp16_figures():
    cmd = "sudo profile record --host -g -a 10"
    lines, rec = session("smp16", 16, [cmd], 600)
    said = record_line(lines, cmd)
    if not said:
        return [("record_smp16_lost", "-", "samples", "the recording did not finish (see %s)" % OUT)]
    p, info, problems = recording.load(rec, profdata.SymbolDirs(), progress=False)
    whole = len(p.samples) == said[0] and not problems
    return [("record_smp16_lost", str(said[1]), "samples",
             "-smp 16, -g -a 10, TCG: %d logged, %s; goal 0" %
             (said[0], "all in the host file" if whole else "host file: %d samples, %s" % (len(p.samples),
                                                                                       "; ".join(problems))))]


def max_figures():
    seconds = int(os.environ.get("BENCH_RECORD_SECONDS", "300"))
    cmd = "sudo profile record --host -g -a %d" % seconds
    lines, rec = session("max", 16, [cmd], seconds + 600)
    said = record_line(lines, cmd)
    if not said or not os.path.exists(rec):
        return [("record_max_samples", "-", "samples", "the recording did not finish (see %s)" % OUT)]
    syms = profdata.SymbolDirs([os.path.join(ROOT, "build", "userland")], os.path.join(ROOT, "build", "kernel.elf"))
    start = time.process_time()
    p, info, problems = recording.load(rec, syms, progress=True, samples="stream")  # as profview.py reads it
    images = perfdata.image_files(p, syms, os.path.join(OUT, "perf"))
    with open(os.path.join(OUT, "perf.data"), "wb") as f:  # as profview.py perfdata writes it
        perfdata.write_perf_data(f, p, syms, lambda: speedscope.sample_interval(p), images)
    perf_s = time.process_time() - start
    start = time.process_time()
    folded = p.folded_lines()
    folded_s = time.process_time() - start
    start = time.process_time()
    speedscope.speedscope(p, "max")
    speed_s = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    n = len(p.samples)
    return [("record_max_samples", str(n), "samples",
             "-smp 16, -g -a %d, TCG: %.0f MB on the host, %d lost, %s; goal >= 5,000,000" %
             (seconds, os.path.getsize(rec) / 1e6, said[1], "whole" if n == said[0] and not problems else
              "; ".join(problems) or "host %d of %d" % (n, said[0]))),
            ("convert_samples_s", "%.0f" % (n / perf_s), "samples/s",
             "perf.data of record_max_samples' %d samples in %.1f s CPU (read included); folded +%.1f s, "
             "speedscope +%.1f s; %d distinct stacks, peak %d MB; goal >= 200,000" %
             (n, perf_s, folded_s, speed_s, len(folded), peak))]


def figures():
    os.makedirs(OUT, exist_ok=True)
    return export_figures() + smp16_figures() + max_figures()


def main():
    subprocess.run(["make", "-s", "all", "build/tests/shell.iso"], cwd=ROOT, check=True)
    rows = figures()
    for name, value, unit, _ in rows:
        print(f"bench: {name} {value} {unit}")
    print("\n".join(["| figure | value | unit | note |", "|---|---|---|---|"] +
                    [f"| {n} | {v} | {u} | {t} |" for n, v, u, t in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
