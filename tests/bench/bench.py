#!/usr/bin/env python3
"""Benchmarks that print figures (`make bench`); they never pass or fail on timing.

boot_ratio: wall time from QEMU start to the kernel's end-of-init line for
build/os.iso on -smp 4 under TCG, divided by the time a bare multiboot2 "hello"
ISO takes to print its first line, both measured in this run, median of 5.
"""
import os, statistics, subprocess, sys, time

QEMU = ["qemu-system-x86_64", "-machine", "pc", "-cpu", "max", "-boot", "d", "-no-reboot",
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


def main():
    figures = []
    hello, _ = time_to_line("build/bench/hello.iso", b"hello", 4)
    osb, _ = time_to_line("build/os.iso", b"boot: kernel init took", 4)
    figures.append(("boot_hello", f"{hello:.3f}", "s", "reference"))
    figures.append(("boot_os", f"{osb:.3f}", "s", "-smp 4, TCG"))
    figures.append(("boot_ratio", f"{osb / hello:.2f}", "x", "target <= 1.6"))
    for name, value, unit, _ in figures:
        print(f"bench: {name} {value} {unit}")
    table = ["| figure | value | unit | note |", "|---|---|---|---|"]
    table += [f"| {n} | {v} | {u} | {t} |" for n, v, u, t in figures]
    print("\n".join(table))
    os.makedirs("build", exist_ok=True)
    with open("build/bench.md", "w") as f:
        f.write("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
