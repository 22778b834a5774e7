"""A recording as a perf.data file that Linux's perf reads (`perf report`,
`perf script`, and what they feed: hotspot, the Firefox Profiler, the
FlameGraph scripts).

The layout is perf's own, as tools/perf/Documentation/perf.data-file-format.txt
describes it and include/uapi/linux/perf_event.h defines its records:

    header     "PERFILE2", its size, the size of one attribute entry, and the
               attrs, data and event_types sections as {offset, size}; a
               256-bit feature bitmap (all clear: no feature sections)
    attrs      one struct perf_event_attr (the 128-byte version 7) and the
               {offset, size} of its ids (none)
    data       COMM records (each process's name), MMAP records (the kernel
               and every program image) and SAMPLE records

A sample carries IP, TID, TIME, CPU, PERIOD and CALLCHAIN, in that order in
the record; its call chain is PERF_CONTEXT_KERNEL and the kernel frames, then
PERF_CONTEXT_USER and the program's, leaf first as the guest logged them.

Symbols: perf names a program's frame from the file its MMAP record names,
taking ip - addr + pgoff as the file offset (build/userland/PROG by its
absolute path). The kernel is perf's "[kernel.kallsyms]" mapping (pid -1, misc
KERNEL, named after a symbol at its start, pgoff that symbol's address, as
perf record writes it): named so, and with no build-id, perf would quietly
name kernel frames from the host's own /proc/kallsyms. So the file also has
the build-id feature section with the kernel's build-id, and the kernel ELF
goes into perf's build-id cache (`perf buildid-cache -a`), where perf finds it
with no option. build/kernel.elf has no build-id note: kernel_with_build_id()
writes a copy with one (NT_GNU_BUILD_ID, the SHA-1 of the file).
"""
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile

MAGIC = b"PERFILE2"
HEADER_SIZE = 104
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7

PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_CPU_CLOCK = 0

SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME = 1 << 0, 1 << 1, 1 << 2
SAMPLE_CALLCHAIN, SAMPLE_CPU, SAMPLE_PERIOD = 1 << 5, 1 << 7, 1 << 8
SAMPLE_TYPE = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD | SAMPLE_CALLCHAIN

ATTR_FLAG_MMAP, ATTR_FLAG_COMM = 1 << 8, 1 << 9
ATTR_FLAG_EXCLUDE_GUEST = 1 << 20  # as perf record sets it: the event is named plain "cpu-clock"

RECORD_MMAP, RECORD_COMM, RECORD_SAMPLE = 1, 3, 9
MISC_KERNEL, MISC_USER = 1, 2

CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
PID_ALL = 0xFFFFFFFF  # -1: the kernel's mappings belong to every process

HEADER_BUILD_ID = 2  # the feature bit of the build-id table
MISC_BUILD_ID_SIZE = 1 << 15  # the entry says how long its build-id is
KERNEL_DSO = "[kernel.kallsyms]"


def _padded(text):
    """A NUL-terminated string padded to a multiple of 8 bytes."""
    raw = text.encode("utf-8") + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


def _record(rtype, misc, body):
    size = 8 + len(body)
    if size > 0xFFFF:
        raise ValueError("perf record of %d bytes" % size)
    return struct.pack("<IHH", rtype, misc, size) + body


def comm_record(pid, tid, name):
    return _record(RECORD_COMM, 0, struct.pack("<II", pid, tid) + _padded(name[:15]))


def mmap_record(pid, tid, addr, length, pgoff, filename, misc):
    return _record(RECORD_MMAP, misc, struct.pack("<IIQQQ", pid, tid, addr, length, pgoff) + _padded(filename))


def sample_record(sample, time_ns, period):
    """SAMPLE: ip, pid/tid, time, cpu/res, period, nr and the chain."""
    kernel = [a for space, a, _, _ in sample.frames if space == "k"]
    user = [a for space, a, _, _ in sample.frames if space == "u"]
    chain = ([CONTEXT_KERNEL] + kernel if kernel else []) + ([CONTEXT_USER] + user if user else [])
    ip = sample.frames[0][1]
    body = struct.pack("<QIIQIIQQ", ip, sample.pid, sample.tid, time_ns, sample.cpu, 0, period, len(chain))
    body += struct.pack("<%dQ" % len(chain), *chain)
    return _record(RECORD_SAMPLE, MISC_KERNEL if sample.mode == "k" else MISC_USER, body)


def attr_bytes(period):
    """struct perf_event_attr, version 7: cpu-clock samples every PERIOD ns."""
    head = struct.pack("<IIQQQQQ", PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_CPU_CLOCK, period,
                       SAMPLE_TYPE, 0, ATTR_FLAG_MMAP | ATTR_FLAG_COMM | ATTR_FLAG_EXCLUDE_GUEST)
    return head + b"\0" * (ATTR_SIZE - len(head))


def elf_file_offset(path, vaddr):
    """The file offset of VADDR in an ELF64 file's loadable segments."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        ptype, _flags, offset, seg_vaddr, _paddr, filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if ptype == 1 and seg_vaddr <= vaddr < seg_vaddr + max(filesz, 1):
            return offset + vaddr - seg_vaddr
    raise ValueError("%s: no loadable segment holds %#x" % (path, vaddr))


def process_names(p):
    """{pid: name}: each process's image name, the idle thread "swapper" (as
    perf names pid 0)."""
    names = {0: "swapper"}
    for pid, name, _, _ in p.images:
        if pid:
            names.setdefault(pid, name)
    return names


def mapping_records(p, syms):
    """MMAP records: the kernel's (every process's) and each program image's,
    named by the absolute path of the ELF file that symbolizes it."""
    out = []
    for pid, name, base, end in p.images:
        path = syms.path(name)
        if path is None or path.endswith(".nm"):
            continue
        path = os.path.abspath(path)
        if pid == 0:
            first = syms.get(name).lookup(base)[0] if syms.get(name) else None
            dso = KERNEL_DSO + (first or "_text")
            out.append(mmap_record(PID_ALL, 0, base, end - base, base, dso, MISC_KERNEL))
        else:
            out.append(mmap_record(pid, pid, base, end - base, elf_file_offset(path, base), path, MISC_USER))
    return out


def build_id_section(kernel_id):
    """The build-id feature: one perf_record_header_build_id, the kernel's."""
    body = struct.pack("<i", -1) + kernel_id + b"\0" * (20 - len(kernel_id)) + struct.pack("<BBH", len(kernel_id), 0, 0)
    body += _padded(KERNEL_DSO)
    return struct.pack("<IHH", 0, MISC_KERNEL | MISC_BUILD_ID_SIZE, 8 + len(body)) + body


def build_id_note(build_id):
    """An ELF note section's bytes: NT_GNU_BUILD_ID (3), owner "GNU"."""
    return struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id


def kernel_with_build_id(kernel, out_dir):
    """(path, build-id): a copy of KERNEL in OUT_DIR with a .note.gnu.build-id
    section holding the SHA-1 of KERNEL's bytes."""
    with open(kernel, "rb") as f:
        build_id = hashlib.sha1(f.read()).digest()
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "kernel.elf")
    with tempfile.NamedTemporaryFile(suffix=".note") as note:
        note.write(build_id_note(build_id))
        note.flush()
        subprocess.run(["objcopy", "--add-section", ".note.gnu.build-id=" + note.name,
                        "--set-section-flags", ".note.gnu.build-id=readonly", kernel, out],
                       check=True, capture_output=True)
    return out, build_id


def cache_kernel(path):
    """Adds PATH to perf's build-id cache; False when perf is not installed."""
    if not shutil.which("perf"):
        return False
    subprocess.run(["perf", "buildid-cache", "-a", path], check=True, capture_output=True)
    return True


def perf_data(p, syms, period=1, kernel_id=None):
    """The bytes of a perf.data file holding P's samples, each PERIOD ns of
    cpu-clock (perf report's event count is their sum); KERNEL_ID, the
    kernel ELF's build-id, makes the build-id feature section."""
    names = process_names(p)
    body = []
    seen = set()
    for s in p.samples:
        if (s.pid, s.tid) not in seen:
            seen.add((s.pid, s.tid))
            body.append(comm_record(s.pid, s.tid, names.get(s.pid, "pid%d" % s.pid)))
    body += mapping_records(p, syms)
    body += [sample_record(s, p.ns(s.tsc), period) for s in sorted(p.samples, key=lambda s: s.tsc)]
    data = b"".join(body)
    entry = attr_bytes(period) + struct.pack("<QQ", 0, 0)
    attrs_off = HEADER_SIZE
    data_off = attrs_off + len(entry)
    header = MAGIC + struct.pack("<QQ", HEADER_SIZE, len(entry))
    header += struct.pack("<QQQQQQ", attrs_off, len(entry), data_off, len(data), 0, 0)
    if not kernel_id:
        return header + b"\0" * 32 + entry + data
    # The features follow the data: an {offset, size} per set bit, then each one.
    feature = build_id_section(kernel_id)
    table_off = data_off + len(data)
    header += struct.pack("<QQQQ", 1 << HEADER_BUILD_ID, 0, 0, 0)
    return header + entry + data + struct.pack("<QQ", table_off + 16, len(feature)) + feature
