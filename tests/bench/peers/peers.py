#!/usr/bin/env python3
"""`make bench-peers`: the cost of one sample under Linux's perf, measured the
way `make bench` measures this kernel's, in the same emulator.

Debian's kernel boots under QEMU with the flags of tests/bench/bench.py
(-cpu max, -icount shift=0,sleep=off, -smp 1), from an initramfs this script
builds: busybox, the host's perf binary with the shared libraries it loads,
and tests/bench/peers/peer.c (bench.c's `work` and `deep` loops, built static
on the host). In the guest, /init runs each workload bare and then under
`perf record -e cpu-clock -c 122100` (and `-g` for the 16-frame one); the
workload times itself with rdtsc, which under icount counts guest
instructions. perf.data comes back over the serial line (base64) and is read
here: the samples that landed in the workload's loop divide the slowdown.

Figures (printed as `bench: NAME VALUE UNIT`, and appended to build/bench.md):
  linux_sample_cost  guest instructions per cpu-clock sample of the flat loop
      (the counterpart of sample_cost_1)
  linux_callchain_cost_0, linux_callchain_cost_16  the same over the workload
      16 frames deep, without and with `-g` (callchain_cost_0/_16's counterparts)
each the median of BOOTS boots x RUNS runs, with the spread of all of them.
docs/bench-peers.md gives the method and what differs from this kernel's.

Options: --boots N (3), --runs N (3), --depth D (16), --period NS (122100),
--timeout S (per boot, 600), --no-kernel-bench. Each boot's serial output,
perf.data in base64 included, stays in build/peers/serial-N.log.
"""
import argparse, base64, glob, gzip, io, lzma, os, re, statistics, struct, subprocess, sys, time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree for bench.py
sys.path.insert(0, os.path.dirname(HERE))
from bench import QEMU, ICOUNT  # the emulator's flags are `make bench`'s own

OUT = "build/peers"
PACKAGES = ["linux-image-amd64", "linux-perf", "busybox-static"]
# The userland's code-generation flags (userland/userland.mk), minus those that
# only make sense without a libc: the timed functions come out the same.
PEER_CFLAGS = ["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fno-pic", "-fno-pie",
               "-fno-stack-protector", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
               "-mno-red-zone", "-fno-strict-aliasing", "-fno-asynchronous-unwind-tables",
               "-fcf-protection=none", "-fno-tree-loop-distribute-patterns"]
# The functions whose instructions must match build/userland/bench's.
TIMED = ["work", "deep", "timed_work", "timed_deep"]


def log(msg):
    print(f"peers: {msg}", flush=True)


# ---------------------------------------------------------------- the host side

def ensure_packages():
    missing = []
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if not missing:
        return
    log("installing " + " ".join(missing))
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing,
                   env=env, check=True, stdout=subprocess.DEVNULL)


def version_key(path):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", path)]


def find_kernel():
    kernels = sorted((k for k in glob.glob("/boot/vmlinuz-*") if os.access(k, os.R_OK)),
                     key=version_key)
    if not kernels:
        sys.exit("bench-peers: no readable /boot/vmlinuz-* (is linux-image-amd64 installed?)")
    return kernels[-1]


def boot_image(kernel):
    """The kernel QEMU is given: KERNEL's own vmlinux, taken out of the bzImage
    (the payload of an xz- or gzip-compressed kernel, an ELF with a PVH entry
    note), so that QEMU enters it directly and the guest does not spend its
    first seconds of emulation decompressing itself. The kernel that runs is
    the same; only its entry differs. KERNEL itself when that fails."""
    out = f"{OUT}/vmlinux"
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(kernel):
        return out
    with open(kernel, "rb") as f:
        image = f.read()
    payload = None
    for magic, decompress in ((b"\xfd7zXZ\x00", lambda d: lzma.LZMADecompressor().decompress(d)),
                              (b"\x1f\x8b\x08", lambda d: zlib.decompressobj(31).decompress(d))):
        at = image.find(magic)
        if at >= 0:
            try:
                payload = decompress(image[at:])
            except (lzma.LZMAError, zlib.error):
                payload = None
            break
    if not payload or payload[:4] != b"\x7fELF":
        log(f"no vmlinux in {kernel}: QEMU boots the compressed image")
        return kernel
    with open(out + ".tmp", "wb") as f:
        f.write(payload)
    notes = subprocess.run(["readelf", "-n", out + ".tmp"], stdout=subprocess.PIPE, text=True).stdout
    if not re.search(r"Xen\s+0x[0-9a-f]+\s+Unknown note type: \(0x00000012\)", notes):
        log(f"{kernel}'s vmlinux has no PVH entry note: QEMU boots the compressed image")
        os.unlink(out + ".tmp")
        return kernel
    os.replace(out + ".tmp", out)
    return out


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_perf():
    """The perf executable itself: Debian ships it as /usr/bin/perf_X.Y behind a
    wrapper in some releases, as /usr/bin/perf in others."""
    cands = sorted(glob.glob("/usr/bin/perf_[0-9]*"), key=version_key) + ["/usr/bin/perf"]
    for c in reversed(cands[:-1]):
        if is_elf(c):
            return c
    if is_elf(cands[-1]):
        return cands[-1]
    sys.exit("bench-peers: no perf executable in /usr/bin (is linux-perf installed?)")


def shared_libraries(binary):
    """The paths ldd resolves for BINARY, the dynamic loader included."""
    out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
    if not libs:
        sys.exit(f"bench-peers: ldd found no libraries for {binary}:\n{out}")
    return libs


def build_peer():
    os.makedirs(OUT, exist_ok=True)
    exe = f"{OUT}/peer"
    src = f"{HERE}/peer.c"
    loops = "userland/include/benchloops.h"
    newest = max(os.path.getmtime(src), os.path.getmtime(loops))
    if not os.path.exists(exe) or os.path.getmtime(exe) < newest:
        subprocess.run(["gcc"] + PEER_CFLAGS + ["-static", "-no-pie", "-iquote", "userland/include",
                                                "-o", exe, src], check=True)
    return exe


def function_body(binary, name):
    """(start, end, [instruction text without addresses]) of function NAME, or of
    its one compiler-made clone (NAME.constprop.0 and the like)."""
    syms = subprocess.run(["nm", "-S", "--defined-only", binary], stdout=subprocess.PIPE,
                          text=True, check=True).stdout
    found = [(int(a, 16), int(s, 16), n) for a, s, _, n in
             (l.split() for l in syms.splitlines() if len(l.split()) == 4)
             if n == name or n.startswith(name + ".")]
    if len(found) != 1:
        sys.exit(f"bench-peers: {binary}: {len(found)} symbols for {name}: {found}")
    start, size, sym = found[0]
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={start + size:#x}", binary],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    insns = []
    for line in dis.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+(.*)$", line)
        if m:
            # Branch targets differ by the load address: keep only the offset in the function.
            text = re.sub(r"\b[0-9a-f]+ <([^>+]+)(\+0x[0-9a-f]+)?>", r"<\1\2>", m.group(1))
            insns.append(re.sub(r"\s+", " ", text).strip())
    return start, start + size, sym, insns


def check_same_code(peer, bench):
    """Compare the timed functions of the Linux workload and of this kernel's
    bench program, instruction by instruction. (Where they sit in memory does
    not matter: icount counts instructions, and TCG has no caches.)"""
    if not os.path.exists(bench):
        log(f"{bench} is not built: the instruction check is skipped")
        return None
    total = 0
    for name in TIMED:
        _, _, sa, ia = function_body(peer, name)
        _, _, sb, ib = function_body(bench, name)
        ia = [i.replace(sa, name) for i in ia]
        ib = [i.replace(sb, name) for i in ib]
        if ia != ib:
            log(f"{name} differs from {bench}'s ({len(ia)} vs {len(ib)} instructions):")
            for x, y in zip(ia + [""] * len(ib), ib + [""] * len(ia)):
                if x or y:
                    print(f"    {x:40} | {y}")
            sys.exit("bench-peers: the Linux workload does not match bench.c's")
        total += len(ia)
    log(f"the workload's {', '.join(TIMED)} are {bench}'s, instruction for instruction "
        f"({total} instructions)")
    return total


class Cpio:
    """A newc ("070701") archive, as the kernel's initramfs unpacker reads it."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.ino = 1
        self.dirs = set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0))
        self.ino += 1
        self.buf.write(hdr.encode() + name_b)
        self.buf.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, 0o40755)

    def file(self, path, data, mode=0o755):
        self.dir(os.path.dirname(path.strip("/")))
        self._entry(path.strip("/"), 0o100000 | mode, data)

    def symlink(self, path, target):
        self.dir(os.path.dirname(path.strip("/")))
        self._entry(path.strip("/"), 0o120777, target.encode())

    def chardev(self, path, major, minor):
        self.dir(os.path.dirname(path.strip("/")))
        self._entry(path.strip("/"), 0o20600, rdev=(major, minor))

    def finish(self):
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


def init_script(args):
    """The guest's /init: facts about the kernel, then BOOTS x RUNS of each run."""
    perf = f"perf record -e cpu-clock -c {args.period} --no-buildid -o /tmp/perf.data"
    runs = [("flat", "/peer flat", None), ("flat", f"{perf} -- /peer flat", "flat_perf"),
            ("deep", f"/peer deep {args.depth}", None),
            ("deep", f"{perf} -- /peer deep {args.depth}", "deep_perf"),
            ("deep", f"{perf} -g -- /peer deep {args.depth}", "deep_perf_g")]
    lines = ["#!/bin/busybox sh",
             "/bin/busybox --install -s /bin",
             "export PATH=/bin:/usr/bin",
             "mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs tmp /tmp",
             "echo \"peers: kernel $(uname -r)\"",
             "echo \"peers: perf $(perf version)\"",
             "echo \"peers: clocksource $(cat /sys/devices/system/clocksource/clocksource0/"
             "current_clocksource), clockevent $(cat /sys/devices/system/clockevents/"
             "clockevent0/current_device)\"",
             "for v in meltdown spectre_v2; do echo \"peers: $v: "
             "$(cat /sys/devices/system/cpu/vulnerabilities/$v)\"; done",
             "echo \"peers: cpus $(nproc), perf_event_paranoid "
             "$(cat /proc/sys/kernel/perf_event_paranoid)\"",
             f"for run in $(seq 1 {args.runs}); do"]
    for kind, cmd, name in runs:
        if name is None:
            lines.append(f"  echo \"peers: run $run base {kind}\"; {cmd}")
        else:
            lines += [f"  echo \"peers: run $run {name}: {cmd}\"; {cmd} 2>&1",
                      f"  echo \"peers: data begin\"; base64 /tmp/perf.data; echo \"peers: data end\"",
                      "  rm -f /tmp/perf.data"]
    lines += ["done",
              # Anything the kernel said about perf (throttling would show here).
              "dmesg | grep -i -E 'perf|throttl|lockup' | sed 's/^/peers: dmesg: /'",
              "echo \"peers: done\"",
              "poweroff -f"]
    return "\n".join(lines) + "\n"


def build_initramfs(args, peer):
    perf = find_perf()
    cpio = Cpio()
    for d in ("proc", "sys", "tmp", "dev", "bin", "usr/bin"):
        cpio.dir(d)
    cpio.chardev("dev/console", 5, 1)  # init's stdin/out before anything is mounted
    cpio.chardev("dev/null", 1, 3)
    with open("/bin/busybox", "rb") as f:
        cpio.file("bin/busybox", f.read())
    with open(perf, "rb") as f:
        cpio.file("usr/bin/perf", f.read())
    libs = shared_libraries(perf)
    for lib in libs:
        with open(os.path.realpath(lib), "rb") as f:
            cpio.file(lib, f.read())
    with open(peer, "rb") as f:
        cpio.file("peer", f.read())
    cpio.file("init", init_script(args).encode())
    path = f"{OUT}/initramfs.cpio.gz"
    with open(path, "wb") as f:
        f.write(gzip.compress(cpio.finish(), compresslevel=6))
    log(f"initramfs {path}: busybox, {perf} and its {len(libs)} libraries, peer "
        f"({os.path.getsize(path) // 1024} KiB)")
    return path


# ----------------------------------------------------------------- perf.data

PERF_RECORD_SAMPLE = 9
PERF_RECORD_FINISHED_ROUND = 68
S_IP, S_TID, S_TIME, S_ADDR, S_READ, S_CALLCHAIN, S_ID, S_CPU, S_PERIOD, S_STREAM_ID = (
    1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8, 1 << 9)
S_IDENTIFIER = 1 << 16
PERF_CONTEXT_MAX = (1 << 64) - 4095  # chain entries at or above are context markers


def read_perf_data(data):
    """The samples of a perf.data file (the format of perf's
    Documentation/perf.data-file-format.txt; records as in linux/perf_event.h):
    a list of (ip, pid, user mode?, callchain without context markers), and
    the count of PERF_RECORD_FINISHED_ROUND records."""
    if data[:8] != b"PERFILE2":
        raise ValueError("not a perf.data file (no PERFILE2 magic)")
    _, attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<6Q", data, 8)
    by_id, types = {}, []
    for off in range(attrs_off, attrs_off + attrs_size, attr_size):
        sample_type = struct.unpack_from("<Q", data, off + 24)[0]
        ids_off, ids_size = struct.unpack_from("<QQ", data, off + attr_size - 16)
        types.append(sample_type)
        for i in range(ids_off, ids_off + ids_size, 8):
            by_id[struct.unpack_from("<Q", data, i)[0]] = sample_type
    samples, rounds = [], 0
    pos, end = data_off, data_off + data_size
    while pos + 8 <= end:
        rtype, misc, size = struct.unpack_from("<IHH", data, pos)
        if size < 8:
            raise ValueError(f"bad record size {size} at {pos}")
        if rtype == PERF_RECORD_FINISHED_ROUND:
            rounds += 1
        elif rtype == PERF_RECORD_SAMPLE:
            p = pos + 8
            st = types[0]
            if len(types) > 1:  # several events: each sample starts with its id
                st = by_id[struct.unpack_from("<Q", data, p)[0]]
            if st & S_IDENTIFIER:
                p += 8
            ip = pid = None
            chain = []
            if st & S_IP:
                ip = struct.unpack_from("<Q", data, p)[0]; p += 8
            if st & S_TID:
                pid = struct.unpack_from("<I", data, p)[0]; p += 8
            for bit in (S_TIME, S_ADDR, S_ID, S_STREAM_ID, S_CPU, S_PERIOD):
                if st & bit:
                    p += 8
            if st & S_READ:
                raise ValueError("samples with PERF_SAMPLE_READ are not handled")
            if st & S_CALLCHAIN:
                nr = struct.unpack_from("<Q", data, p)[0]; p += 8
                chain = [x for x in struct.unpack_from(f"<{nr}Q", data, p) if x < PERF_CONTEXT_MAX]
            samples.append((ip, pid, (misc & 7) == 2, chain))
        pos += size
    return samples, rounds


# ----------------------------------------------------------------- the guest runs

def boot(args, image, initrd, n):
    cmd = ["timeout", "--kill-after=10", str(args.timeout)] + QEMU + [
        "-smp", "1", "-m", "256M", "-kernel", image, "-initrd", initrd,
        "-append", "console=ttyS0 quiet panic=-1"] + ICOUNT
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    took = time.monotonic() - start
    text = p.stdout.decode(errors="replace").replace("\r", "")
    with open(f"{OUT}/serial-{n}.log", "w") as f:
        f.write(text)
    if "peers: done" not in text:
        tail = "\n".join(text.splitlines()[-30:])
        sys.exit(f"bench-peers: boot {n} did not finish (QEMU status {p.returncode}, "
                 f"{took:.0f} s; {p.stderr.decode(errors='replace').strip()}):\n{tail}")
    return text, took


def parse_boot(text, work_range, depth):
    """{run name: [per-run dict]} from one boot's serial output."""
    res = {}
    base = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"peers: run (\d+) base (\w+)$", line)
        if m:
            t = re.match(r"peer: \w+ (?:\d+ )?(\d+) instructions", lines[i + 1])
            base[m.group(2)] = int(t.group(1))
            i += 2
            continue
        m = re.match(r"peers: run (\d+) (\w+): ", line)
        if m:
            name = m.group(2)
            kind = name.split("_")[0]
            with_ = woken = captured = None
            j = i + 1
            while not lines[j].startswith("peers: data begin"):
                t = re.match(r"peer: \w+ (?:\d+ )?(\d+) instructions", lines[j])
                if t:
                    with_ = int(t.group(1))
                w = re.search(r"Woken up (\d+) times", lines[j])
                if w:
                    woken = int(w.group(1))
                c = re.search(r"\((\d+) samples\)", lines[j])
                if c:
                    captured = int(c.group(1))
                j += 1
            k = j + 1
            while lines[k] != "peers: data end":
                k += 1
            samples, rounds = read_perf_data(base64.b64decode("".join(lines[j + 1:k])))
            in_work = [s for s in samples if s[2] and work_range[0] <= s[0] < work_range[1]]
            frames = [len(s[3]) for s in in_work]
            if with_ is None or not in_work:
                sys.exit(f"bench-peers: run {name} gave no figure:\n" + "\n".join(lines[i:j]))
            res.setdefault(name, []).append({
                "chain": in_work[len(in_work) // 2][3],
                "base": base[kind], "with": with_, "samples": len(in_work),
                "all_samples": len(samples), "captured": captured, "woken": woken,
                "rounds": rounds, "frames": statistics.mean(frames) if frames else 0,
                "cost": (with_ - base[kind]) / len(in_work)})
            i = k + 1
            continue
        i += 1
    return res


def symbolize(binary, addrs):
    """Function names for ADDRS in BINARY, runs of one name folded (deep x 11)."""
    syms = []
    for line in subprocess.run(["nm", "-n", "--defined-only", binary], stdout=subprocess.PIPE,
                               text=True, check=True).stdout.splitlines():
        a, kind, n = line.split()
        if kind in "tTwW":
            syms.append((int(a, 16), n.split(".")[0]))
    names = []
    for x in addrs:
        below = [n for a, n in syms if a <= x]
        names.append(below[-1] if below else hex(x))
    folded = []
    for n in names:
        if folded and folded[-1][0] == n:
            folded[-1][1] += 1
        else:
            folded.append([n, 1])
    return ", ".join(n if c == 1 else f"{n} x {c}" for n, c in folded)


def spread(values):
    med = statistics.median(values)
    return med, min(values), max(values)


def kernel_figures():
    """sample_cost_1, callchain_cost_0 and callchain_cost_D from build/bench.md
    (make bench writes it)."""
    found = {}
    try:
        with open("build/bench.md") as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) < 2 or not cells[1].isdigit():
                    continue
                if re.fullmatch(r"sample_cost_1|callchain_cost_\d+", cells[0]):
                    found[cells[0]] = int(cells[1])
                m = re.search(r"(\d+) without the chain", line)
                if cells[0].startswith("callchain_cost_") and m:
                    found["callchain_cost_0"] = int(m.group(1))
    except FileNotFoundError:
        pass
    return found


def run_kernel_bench(depth):
    """This kernel's two figures, when build/bench.md has none: the two runs of
    `make bench` they come from (bench cost 1, bench callchain D)."""
    from bench import run_init, figure
    log("build/bench.md has no sample_cost_1: running this kernel's bench cost 1 and "
        f"bench callchain {depth}")
    c1, _ = figure(run_init(["bench", "cost", "1"], 1, ICOUNT), "sample_cost_1")
    text = run_init(["bench", "callchain", str(depth)], 1, ICOUNT)
    c0, _ = figure(text, "callchain_cost_0")
    cd, _ = figure(text, f"callchain_cost_{depth}")
    return {"sample_cost_1": int(c1), "callchain_cost_0": int(c0),
            f"callchain_cost_{depth}": int(cd), "measured_here": True}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boots", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--period", type=int, default=122100,
                    help="cpu-clock period in ns: 1,221 x 100 ns, make bench's interval")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--no-kernel-bench", action="store_true",
                    help="never run this kernel's bench for missing figures")
    args = ap.parse_args()
    started = time.monotonic()
    ensure_packages()
    kernel = find_kernel()
    peer = build_peer()
    check_same_code(peer, "build/userland/bench")
    work_start, work_end, _, _ = function_body(peer, "work")
    initrd = build_initramfs(args, peer)
    image = boot_image(kernel)
    log(f"QEMU: {' '.join(QEMU)} -smp 1 -m 256M -kernel {image} -initrd {initrd} "
        f"{' '.join(ICOUNT)}")

    results = {}
    for n in range(1, args.boots + 1):
        text, took = boot(args, image, initrd, n)
        if n == 1:
            for line in text.splitlines():
                if line.startswith("peers: ") and not line.startswith(("peers: run", "peers: data")):
                    print(line)
        for name, runs in parse_boot(text, (work_start, work_end), args.depth).items():
            for r, v in enumerate(runs, 1):
                results.setdefault(name, []).append(v)
                log(f"boot {n} run {r} {name}: workload {v['base']} bare, {v['with']} sampled, "
                    f"{v['samples']} samples in work ({v['all_samples']} in all, "
                    f"{v['frames']:.1f} frames each), perf woken {v['woken']} times: "
                    f"{v['cost']:.0f} instructions a sample")
        log(f"boot {n} took {took:.1f} s")
        if n == 1:
            log("a -g sample's user chain, leaf first: " +
                symbolize(peer, results["deep_perf_g"][0]["chain"]))

    ours = kernel_figures()
    if "sample_cost_1" not in ours and not args.no_kernel_bench:
        ours = run_kernel_bench(args.depth)
    elif ours:
        log("this kernel's figures, from build/bench.md: " +
            ", ".join(f"{n} {v}" for n, v in ours.items()))
    names = {"flat_perf": ("linux_sample_cost", "sample_cost_1", "perf record -e cpu-clock"),
             "deep_perf": ("linux_callchain_cost_0", "callchain_cost_0",
                           f"perf record, {args.depth} frames deep, no -g"),
             "deep_perf_g": (f"linux_callchain_cost_{args.depth}", f"callchain_cost_{args.depth}",
                             "perf record -g")}
    rows = []
    for key, (figname, ourname, what) in names.items():
        costs = [v["cost"] for v in results[key]]
        med, lo, hi = spread(costs)
        frames = statistics.mean(v["frames"] for v in results[key])
        print(f"bench: {figname} {med:.0f} instructions")
        note = (f"{what}, Linux {os.path.basename(kernel)[len('vmlinuz-'):]}, median of "
                f"{len(costs)} ({args.boots} boots x {args.runs}), spread {lo:.0f}..{hi:.0f}")
        if key == "deep_perf_g":
            note += f", {frames:.1f} user frames a sample"
        if ourname in ours:
            ratio = med / ours[ourname]
            print(f"bench: {figname}_ratio {ratio:.1f} x {ourname} ({ours[ourname]})")
            note += f"; {ratio:.1f} x {ourname} ({ours[ourname]})"
        else:
            print(f"bench: {ourname} missing (no build/bench.md figure): no ratio")
        log(f"{figname}: median {med:.0f}, min {lo:.0f}, max {hi:.0f}, "
            f"spread +-{(hi - lo) / 2:.0f}: " + " ".join(f"{c:.0f}" for c in costs))
        rows.append((figname, f"{med:.0f}", "instructions", note))
    elapsed = time.monotonic() - started
    log(f"took {elapsed:.0f} s")
    if ours.get("measured_here"):
        rows = [(n, str(v), "instructions", "this kernel, run by make bench-peers")
                for n, v in ours.items() if n != "measured_here"] + rows
    table = [f"| {n} | {v} | {u} | {t} |" for n, v, u, t in rows]
    print("\n".join(table))
    os.makedirs("build", exist_ok=True)
    kept = ""
    if os.path.exists("build/bench.md"):
        with open("build/bench.md") as f:
            kept = "".join(l for l in f if not l.startswith("| linux_"))
    if not kept:
        kept = "| figure | value | unit | note |\n|---|---|---|---|\n"
    with open("build/bench.md", "w") as f:
        f.write(kept + "\n".join(table) + "\n")

if __name__ == "__main__":
    main()
