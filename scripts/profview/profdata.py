"""Profiles read on the host: the guest's export block, gmon.out histograms,
folded-stack files, and the ELF symbol tables that name their addresses.

Everything ends up as a Profile: weighted call stacks (root first, names as
the folded format writes them), self hits per function, hits per address
(for annotating instructions) and, for an export, per-process and per-CPU
breakdowns. Standard library only: the host may have no pip.
"""
import bisect
import collections
import contextlib
import gc
import importlib.util
import os
import re
import struct
import subprocess

KERNEL_SUFFIX = "_[k]"  # the folded convention for kernel frames
UNKNOWN = "[unknown]"


@contextlib.contextmanager
def no_gc():
    """Python's cycle collector off for a while: a recording's millions of
    samples are tuples with no cycles, and each collection of the oldest
    generation would walk all of them again (a conversion's time grew faster
    than its samples)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --- ELF symbol tables --------------------------------------------------------


def elf_functions(path):
    """[(address, name)] sorted, the functions of an ELF64 little-endian file
    as the guest's symbolizer keeps them (userland/lib/elfsym.c:is_function),
    so that both name an address alike: symbols defined in executable
    sections that are functions (STT_FUNC) or labels without a dot (an
    assembler's local labels, such as NASM's uaccess_copy.done, belong to
    the function before them); one per address, a sized function before a
    label."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("%s: not a little-endian ELF64 file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    SHT_SYMTAB, SHF_EXECINSTR, STT_NOTYPE, STT_FUNC = 2, 4, 0, 2
    best = {}
    for sec in sections:
        if sec[1] != SHT_SYMTAB:
            continue
        strtab = sections[sec[6]]
        str_off = strtab[4]
        for i in range(sec[5] // 24):
            name_off, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, sec[4] + i * 24)
            if info & 0xF not in (STT_NOTYPE, STT_FUNC) or shndx == 0 or shndx >= len(sections):
                continue
            if not sections[shndx][2] & SHF_EXECINSTR:
                continue
            end = data.index(b"\0", str_off + name_off)
            name = data[str_off + name_off:end].decode("utf-8", "replace")
            if not name or (info & 0xF == STT_NOTYPE and "." in name) or name.startswith("$"):
                continue
            rank = (size == 0, name)  # sized first, then by name
            if value not in best or rank < best[value]:
                best[value] = rank
    return sorted((a, name) for a, (_, name) in best.items())


def nm_functions(path):
    """The same from a text file in `nm -n` form (ADDRESS TYPE NAME), for
    test fixtures that stand in for a program not built yet."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                out.append((int(parts[0], 16), parts[2]))
    return sorted(out)


class Symbols:
    """Function lookup for one image: the function at or before an address
    (the attribution rule of the in-guest report)."""

    def __init__(self, funcs, path=""):
        self.path = path
        self.addrs = [a for a, _ in funcs]
        self.names = [n for _, n in funcs]

    def lookup(self, addr):
        """(name, start address) or (None, None) before the first symbol."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None, None
        return self.names[i], self.addrs[i]

    def address_of(self, name):
        for a, n in zip(self.addrs, self.names):
            if n == name:
                return a
        return None

    def end_of(self, name):
        """The address of the next symbol after NAME (its end as the report sees it)."""
        a = self.address_of(name)
        if a is None:
            return None
        i = bisect.bisect_right(self.addrs, a)
        return self.addrs[i] if i < len(self.addrs) else a + 0x1000


class SymbolDirs:
    """Finds the symbol table of an image by name: `kernel` is the kernel
    ELF, anything else build/userland/NAME, or NAME.nm beside it."""

    def __init__(self, elf_dirs=("build/userland",), kernel="build/kernel.elf"):
        self.elf_dirs = list(elf_dirs)
        self.kernel = kernel
        self.cache = {}

    def path(self, image):
        if image == "kernel" and self.kernel and os.path.exists(self.kernel):
            return self.kernel
        for d in self.elf_dirs:
            for cand in (os.path.join(d, image), os.path.join(d, image + ".nm")):
                if os.path.isfile(cand):
                    return cand
        return None

    def get(self, image):
        if image not in self.cache:
            p = self.path(image)
            if p is None:
                self.cache[image] = None
            else:
                funcs = nm_functions(p) if p.endswith(".nm") else elf_functions(p)
                self.cache[image] = Symbols(funcs, p)
        return self.cache[image]


# --- the console: export blocks and gmon frames ---------------------------------

EXPORT_BEGIN = "@@profile-export v1 begin"
EXPORT_END = "@@profile-export v1 end"


def console_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.rstrip("\r\n").replace("\r", "") for line in f]


def export_blocks(lines):
    """The lines of each complete export block, in order."""
    blocks, cur = [], None
    for line in lines:
        s = line.strip()
        if s == EXPORT_BEGIN:
            cur = []
        elif s == EXPORT_END and cur is not None:
            blocks.append(cur)
            cur = None
        elif cur is not None:
            cur.append(s)
    return blocks


def gmon_frames(path):
    """[(name, bytes)] of every good gmon frame in a console log, in order
    (scripts/gmon-extract.py reads the framing)."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("gmon_extract", os.path.join(here, "..", "gmon-extract.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with open(path, encoding="utf-8", errors="replace") as f:
        return [(n, d) for n, d, problem in mod.frames(f) if d is not None]


# --- the profile ---------------------------------------------------------------


class Profile:
    """Weighted stacks and the tables derived from them."""

    def __init__(self, title):
        self.title = title
        self.kind = "export"  # or "flat" (a histogram) or "folded"
        self.stacks = collections.Counter()  # tuple of frame names, root first -> hits
        self.self_hits = collections.Counter()  # (image, function) -> hits
        self.addr_hits = collections.Counter()  # (image, address) -> hits (leaf IPs or buckets)
        self.bucket = 1  # bytes per addr_hits entry
        self.total = 0
        self.images = []  # (pid, name, base, end)
        self.by_pid = collections.defaultdict(collections.Counter)  # pid -> (image, func) -> hits
        self.by_cpu = collections.defaultdict(collections.Counter)  # cpu -> (image, func) -> hits
        self.mode_by_pid = collections.defaultdict(collections.Counter)  # pid -> 'u'/'k' -> hits
        self.mode_by_cpu = collections.defaultdict(collections.Counter)
        self.pid_names = {}
        self.lost = collections.Counter()
        self.lost_records = []  # (cpu, count, tsc; 0 when the export has none)
        self.parents = {}  # pid -> the pid that started it (image lines that say)
        self.map_tsc = {}  # pid -> the TSC of its first map record
        self.cpu_id = self.cpu_desc = ""  # `cpu VENDOR,FAMILY,MODEL,STEPPING BRAND`
        self.sources = {}  # KPROFILE_SOURCE -> its units per sample (`source` line)
        self.guest_folded = collections.Counter()
        self.warnings = []
        # An export's samples one by one, in log order: Sample tuples
        # (tsc, cpu, pid, tid, mode, frames leaf first as (space, address,
        # image, function), truncated); the time base (`clock` line; 0 when
        # the guest's export had none) and the context switches.
        self.samples = []
        self.tsc_hz = 0
        self.ncpus = 0
        self.cswitches = []  # (cpu, tsc, old pid, new pid, [(event, value)])
        # Off-CPU records (profile record --off-cpu): OffCpu tuples in log
        # order, and their stacks, root first with the reason ("[sleep]") as
        # the leaf, weighted by microseconds away.
        self.offcpu = []
        self.off_stacks = collections.Counter()

    def ns(self, tsc):
        """A TSC time in nanoseconds since the first sample or switch."""
        key = (len(self.samples), len(self.cswitches), len(self.offcpu))
        if getattr(self, "_t0", (None,))[0] != key:
            self._t0 = (key, min([s.tsc for s in self.samples[:1]] + [c[1] for c in self.cswitches[:1]] +
                                 [o.tsc for o in self.offcpu] or [0]))
        t0 = self._t0[1]
        hz = self.tsc_hz or 10 ** 9
        return (tsc - t0) * 10 ** 9 // hz

    def ns_function(self):
        """ns as a plain function of the TSC, for loops over every sample."""
        self.ns(0)
        t0, hz = self._t0[1], self.tsc_hz or 10 ** 9
        return lambda tsc: (tsc - t0) * 10 ** 9 // hz

    def add(self, stack, count, leaf_key=None, addr_key=None):
        self.stacks[tuple(stack)] += count
        self.total += count
        if leaf_key is None:
            leaf_key = ("", stack[-1])
        self.self_hits[leaf_key] += count
        if addr_key is not None:
            self.addr_hits[addr_key] += count

    def folded_lines(self):
        """Root-first `a;b;c count` lines, sorted (FlameGraph, speedscope, inferno)."""
        return ["%s %d" % (";".join(s), n) for s, n in sorted(self.stacks.items()) if n]

    def function_hits(self):
        """{function label: self hits}; kernel functions carry _[k]."""
        out = collections.Counter()
        for (image, func), n in self.self_hits.items():
            out[label(image, func)] += n
        return out

    def inclusive_hits(self):
        """{function label: hits of stacks that contain it}."""
        out = collections.Counter()
        for stack, n in self.stacks.items():
            for name in set(stack):
                out[name] += n
        return out

    def off_folded_lines(self):
        """The off-CPU stacks as folded lines weighted by microseconds."""
        return ["%s %d" % (";".join(s), n) for s, n in sorted(self.off_stacks.items()) if n]

    def tree(self, stacks=None):
        """The stacks (default: the samples'; or STACKS, a Counter) as nested
        {name, value, children}, value inclusive, under a root named "all"
        (d3-flame-graph's input)."""
        root = {"name": "all", "value": 0, "children": {}}
        for stack, n in (self.stacks if stacks is None else stacks).items():
            node = root
            node["value"] += n
            for name in stack:
                node = node["children"].setdefault(name, {"name": name, "value": 0, "children": {}})
                node["value"] += n
        return _listify(root)


def _listify(node):
    return {"name": node["name"], "value": node["value"],
            "children": [_listify(c) for c in node["children"].values()]}


def label(image, func):
    return func + KERNEL_SUFFIX if image == "kernel" and not func.endswith(KERNEL_SUFFIX) else func


Sample = collections.namedtuple("Sample", "tsc cpu pid tid mode frames truncated source", defaults=(0,))
# A switch-out whose switch-in is known: the TSC of the switch-out, the time
# away in ns, why (REASONS), the chain where the thread left (always in the
# kernel); source OFFCPU_SOURCE, so perf.data gives it an event of its own.
OFFCPU_SOURCE = 0x10000
OffCpu = collections.namedtuple("OffCpu", "tsc cpu pid tid mode frames truncated source off_ns reason")
REASONS = ["runnable", "sleep", "child", "console", "mutex", "other"]  # enum thread_wait (kernel/lib/abi/pmclog.h)


def reason_name(reason):
    return REASONS[reason] if 0 <= reason < len(REASONS) else "reason%d" % reason

SAMPLE = re.compile(r"^sample (\d+) (\d+) (\d+) (\d+) ([uk]) (\S+)(?: (\d+))?$")
OFFCPU = re.compile(r"^offcpu (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\S+)$")
SOURCE = re.compile(r"^source (\d+) (\d+)$")
CLOCK = re.compile(r"^clock (\d+) (\d+)$")
CSWITCH = re.compile(r"^cswitch (\d+) (\d+) (\d+) (\d+) (\S+)$")
IMAGE = re.compile(r"^image (\d+) (\S+) ([0-9a-fA-F]+) ([0-9a-fA-F]+)(?: (\d+) (\d+))?$")
LOST = re.compile(r"^lost (\d+) (\d+)(?: (\d+))?$")
FOLDED = re.compile(r"^folded (.+) (\d+)$")
CPU = re.compile(r"^cpu (\S+) (.+)$")


def from_export(block, syms, title="profile"):
    """A Profile from the lines of one export block, symbolized on the host."""
    p = Profile(title)
    raw, offraw = [], []
    for line in block:
        m = IMAGE.match(line)
        if m:
            pid, name = int(m.group(1)), m.group(2)
            p.images.append((pid, name, int(m.group(3), 16), int(m.group(4), 16)))
            p.pid_names.setdefault(pid, name)
            if m.group(5):
                p.parents.setdefault(pid, int(m.group(5)))
                p.map_tsc.setdefault(pid, int(m.group(6)))
            continue
        m = SAMPLE.match(line)
        if m:
            raw.append(m)
            continue
        m = OFFCPU.match(line)
        if m:
            offraw.append(m)
            continue
        m = LOST.match(line)
        if m:
            p.lost[int(m.group(1))] += int(m.group(2))
            p.lost_records.append((int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)))
            continue
        m = FOLDED.match(line)
        if m:
            p.guest_folded[m.group(1)] += int(m.group(2))
            continue
        m = SOURCE.match(line)
        if m:
            p.sources[int(m.group(1))] = int(m.group(2))
            continue
        m = CPU.match(line)
        if m:
            p.cpu_id, p.cpu_desc = m.group(1), m.group(2).strip()
            continue
        m = CLOCK.match(line)
        if m:
            p.tsc_hz, p.ncpus = int(m.group(1)), int(m.group(2))
            continue
        m = CSWITCH.match(line)
        if m:
            values = [tuple(int(x) for x in kv.split(":")) for kv in m.group(5).split(",") if ":" in kv]
            p.cswitches.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), values))
            continue
        if line:
            p.warnings.append("unrecognised export line: %r" % line)

    def image_of(pid, space, addr):
        want_pid = 0 if space == "k" else pid
        for ipid, name, base, end in p.images:
            if ipid == want_pid and base <= addr < end:
                return name
        return "kernel" if space == "k" else None

    def name_of(pid, space, addr):
        image = image_of(pid, space, addr)
        table = syms.get(image) if image else None
        func = table.lookup(addr)[0] if table else None
        return image or "?", func or UNKNOWN

    def frames_of(pid, text):
        """([(space, address, image, function)] leaf first, truncated). Every
        frame after the first is a return address: it is named by the byte
        before it, inside the call (userland/lib/callgraph.c:add_chain does
        the same), since a call that ends its function returns to the next
        one's first byte (a label such as lean_user_work_return)."""
        frames = text.split(",")
        trunc = bool(frames) and frames[-1] == "trunc"
        full = []
        for fr in frames[:-1] if trunc else frames:
            space, _, hexaddr = fr.partition(":")
            if space not in ("u", "k") or not hexaddr:
                p.warnings.append("bad frame %r" % fr)
                continue
            addr = int(hexaddr, 16)
            full.append((space, addr) + name_of(pid, space, addr - 1 if full else addr))
        return full, trunc

    for m in raw:
        cpu, pid, mode = int(m.group(1)), int(m.group(2)), m.group(5)
        full, trunc = frames_of(pid, m.group(6))
        if not full:
            continue
        named = [(image, func) for _, _, image, func in full]
        p.samples.append(Sample(int(m.group(4)), cpu, pid, int(m.group(3)), mode, full, trunc,
                                int(m.group(7) or 0)))
        # As the guest's folded lines: a truncated chain is counted (record's
        # summary), not given a root of its own.
        stack = [label(image, func) for image, func in reversed(named)]
        p.add(stack, 1, leaf_key=named[0], addr_key=(full[0][2], full[0][1]))
        p.by_pid[pid][named[0]] += 1
        p.by_cpu[cpu][named[0]] += 1
        p.mode_by_pid[pid][mode] += 1
        p.mode_by_cpu[cpu][mode] += 1
    for m in offraw:
        pid = int(m.group(2))
        full, trunc = frames_of(pid, m.group(7))
        if not full:
            continue
        o = OffCpu(int(m.group(4)), int(m.group(1)), pid, int(m.group(3)), "k", full, trunc, OFFCPU_SOURCE,
                   int(m.group(5)), int(m.group(6)))
        p.offcpu.append(o)
        stack = [label(image, func) for _, _, image, func in reversed(full)] + ["[%s]" % reason_name(o.reason)]
        p.off_stacks[tuple(stack)] += (o.off_ns + 500) // 1000
    host = collections.Counter({";".join(s): n for s, n in p.stacks.items()})
    if p.guest_folded and p.guest_folded != host:
        # The guest's folded lines define the stacks (`profile report
        # --folded`); the samples still give the tables and the addresses.
        differ = sorted(set(p.guest_folded.items()) ^ set(host.items()))
        p.warnings.append("the guest's folded lines and the host's symbolization of the samples differ "
                          "(%d lines, e.g. %s %d); the pictures use the guest's" % (len(differ), *differ[0]))
        p.stacks = collections.Counter({tuple(k.split(";")): n for k, n in p.guest_folded.items()})
        p.total = sum(p.stacks.values())
    return p


def from_gmon(data, elf_path, title="profile"):
    """A flat Profile from a gmon.out histogram: each bucket's hits go to the
    function containing the bucket's first byte (the NT attribution rule)."""
    if data[:4] != b"gmon":
        raise ValueError("not a gmon.out file")
    hist = collections.Counter()
    low = high = nbins = None
    off = 20
    while off < len(data):
        tag = data[off]
        if tag != 0:
            raise ValueError("gmon.out record tag %d is not TIME_HIST" % tag)
        low, high, nbins, _rate = struct.unpack_from("<QQII", data, off + 1)
        off += 41
        bins = struct.unpack_from("<%dH" % nbins, data, off)
        off += 2 * nbins
        for i, v in enumerate(bins):
            if v:
                hist[i] += v
    p = Profile(title)
    p.kind = "flat"
    if nbins is None:
        return p
    p.bucket = (high - low) // nbins if nbins else 1
    funcs = elf_functions(elf_path) if not elf_path.endswith(".nm") else nm_functions(elf_path)
    table = Symbols(funcs, elf_path)
    image = os.path.basename(elf_path)
    if image == "kernel.elf":
        image = "kernel"
    for i, n in sorted(hist.items()):
        addr = low + i * p.bucket
        func = table.lookup(addr)[0] or UNKNOWN
        p.add([label(image, func)], n, leaf_key=(image, func), addr_key=(image, addr))
    p.images.append((0, image, low, high))
    return p


def from_folded(lines, title="profile"):
    """A Profile from folded-stack lines (no addresses, no breakdowns)."""
    p = Profile(title)
    p.kind = "folded"
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            p.warnings.append("bad folded line %r" % line)
            continue
        frames = stack.split(";")
        leaf = frames[-1]
        image = "kernel" if leaf.endswith(KERNEL_SUFFIX) else ""
        p.add(frames, int(count), leaf_key=(image, leaf[:-len(KERNEL_SUFFIX)] if image else leaf))
    return p


def load(spec, syms, elf=None, samples=True):
    """A Profile from a path: a folded file, a gmon.out file, a recording (of
    `profile record --host`), or a console log (its last export block, else its
    last gmon frame). Returns (profile, description). Without SAMPLES a
    recording's samples are counted into its tables but not kept one by one."""
    with open(spec, "rb") as f:
        head = f.read(24)
    title = os.path.basename(spec)
    if recording_file(head):
        import recording  # noqa: E402  (it builds on this module)
        p, rec, problems = recording.load(spec, syms, title, samples=samples)
        p.warnings += problems
        return p, "recording (%d records)" % rec.records
    if head == b"gmon":
        with open(spec, "rb") as f:
            data = f.read()
        elf = elf or _gmon_elf(os.path.basename(spec), syms)
        return from_gmon(data, elf, title), "gmon.out histogram"
    lines = console_lines(spec)
    # The last export with samples (a --cswitch recording's export has none).
    blocks = export_blocks(lines)
    blocks = [b for b in blocks if any(l.startswith("sample ") for l in b)] or blocks
    if blocks:
        return from_export(blocks[-1], syms, title), "export block"
    if any(l.startswith("gmon: begin ") for l in lines):
        frames = gmon_frames(spec)
        if not frames:
            raise ValueError("%s: no intact gmon frame" % spec)
        name, data = frames[-1]
        elf = elf or _gmon_elf(name, syms)
        return from_gmon(data, elf, title), "gmon.out frame %s" % name
    if lines and all(re.match(r"^.+ \d+$", l) or not l.strip() for l in lines):
        return from_folded(lines, title), "folded stacks"
    raise ValueError("%s: no export block, gmon frame or folded stacks" % spec)


def recording_file(head):
    """True when HEAD, a file's first 24 bytes, begins a `profile record --host`
    recording (scripts/profview/recording.py reads it)."""
    return len(head) >= 24 and head[0:2] == b"\x01\x01" and head[16:24] == b"PMCREC\r\n"


def _gmon_elf(name, syms):
    """PROG.gmon.out / PROG.SOURCE.gmon.out / kernel.gmon.out -> the ELF."""
    prog = name.split(".")[0]
    path = syms.path(prog)
    if path is None:
        raise ValueError("no symbol table for %s (looked for %s)" % (name, prog))
    return path


# --- disassembly ---------------------------------------------------------------

INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")


def disassemble(elf, func):
    """[(address, bytes text, instruction text)] of FUNC, from objdump -d."""
    out = subprocess.run(["objdump", "-d", "-w", "--disassemble=" + func, elf],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = INSN.match(line)
        if m:
            rows.append((int(m.group(1), 16), m.group(2).strip(), (m.group(3) or "").strip()))
    return rows
