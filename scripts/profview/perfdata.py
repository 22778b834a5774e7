"""A recording as a perf.data file that Linux's perf (`perf report`, `perf
script`, `perf annotate`) and hotspot read as they read one `perf record -g`
wrote.

The layout is perf's own, as tools/perf/Documentation/perf.data-file-format.txt
describes it and include/uapi/linux/perf_event.h defines its records:

    header     "PERFILE2", its size, the size of one attribute entry, the
               attrs, data and event_types sections as {offset, size}, and
               the 256-bit bitmap of the feature sections after the data
    ids        each attribute's event ids (one per CPU)
    attrs      one struct perf_event_attr (the 128-byte version 7) per event
               and the {offset, size} of its ids
    data       records in time order: COMM, FORK, MMAP2 and EXIT for every
               process with samples, the kernel's MMAP2 once (pid -1), SAMPLE,
               LOST, and SWITCH_CPU_WIDE where the recording has switches
    features   perfheader.py: host, release, CPUs, command line, event
               names and ids, build-ids

Every attribute has sample_id_all and PERF_SAMPLE_IDENTIFIER, so each record
ends with (or, a sample, starts with) the id of its event: hotspot's parser
(KDAB/perfparser app/perfdata.cpp) maps records to events by that id and the
ids of the EVENT_DESC feature. A sample carries IDENTIFIER, IP, TID, TIME,
CPU, PERIOD and CALLCHAIN, in that order; its call chain is
PERF_CONTEXT_KERNEL and the kernel frames, then PERF_CONTEXT_USER and the
program's, leaf first as the guest logged them. Times are nanoseconds of the
guest's TSC (tsc * 10^9 / tsc_hz), since its boot as perf's are.

An off-CPU recording (profile record --off-cpu) adds the event perf record
--off-cpu writes, "offcpu-time" (a software event, PERF_COUNT_SW_BPF_OUTPUT
as perf's tools/perf/util/bpf_off_cpu.c allocates it): one sample per
switch-out at its time, its chain the stack where the thread left, its
period the nanoseconds until it ran again, so `perf report` weighs the
stacks by time away.

Symbols, by build-id as perf finds them: every image is a copy of its ELF
file with a .note.gnu.build-id section (the SHA-1 of the file; the guest's
programs and kernel have none) in OUT/perf/, named by the MMAP2 record that
carries its build-id (PERF_RECORD_MISC_MMAP_BUILD_ID) and listed in the
BUILD_ID feature. The kernel is perf's "[kernel.kallsyms]_text" mapping; its
copy goes into perf's build-id cache (`perf buildid-cache -a`), and its
symbols, as a kallsyms file, to ~/.debug/[kernel.kallsyms]/BUILD-ID/kallsyms,
where perf record leaves it and hotspot's parser looks (perfparser
app/perfunwind.cpp): so neither takes the host's /proc/kallsyms.
"""
import bisect
import collections
import hashlib
import heapq
import io
import operator
import os
import shutil
import struct
import subprocess
import tempfile

import perfheader
import profdata

MAGIC = b"PERFILE2"
HEADER_SIZE = 104
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7

PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_RAW = 0, 1, 4
PERF_COUNT_SW_BPF_OUTPUT = 10  # the config of perf's offcpu-time event
PMU_TYPES = {PERF_TYPE_HARDWARE: ("cpu", 4), PERF_TYPE_SOFTWARE: ("software", 1), PERF_TYPE_RAW: ("cpu", 4)}

# A KPROFILE_SOURCE as perf names it: ProfileTime is perf's cpu-clock
# (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK), the sources `profile` takes
# perf's names for are its hardware events (PERF_TYPE_HARDWARE and the
# PERF_COUNT_HW_* of include/uapi/linux/perf_event.h), any other a raw event
# (config: the source) under the guest's own name.
PERF_EVENTS = {0x00: ("cpu-clock", PERF_TYPE_SOFTWARE, 0), 0x13: ("cycles", PERF_TYPE_HARDWARE, 0),
               0x1A: ("instructions", PERF_TYPE_HARDWARE, 1), 0x1C: ("cache-references", PERF_TYPE_HARDWARE, 2),
               0x1D: ("cache-misses", PERF_TYPE_HARDWARE, 3), 0x1E: ("branches", PERF_TYPE_HARDWARE, 4),
               0x1F: ("branch-misses", PERF_TYPE_HARDWARE, 5), 0x1B: ("ref-cycles", PERF_TYPE_HARDWARE, 9)}
SOURCE_NAMES = ("ProfileTime ProfileAlignmentFixup ProfileTotalIssues ProfilePipelineDry "
                "ProfileLoadInstructions ProfilePipelineFrozen ProfileBranchInstructions "
                "ProfileTotalNonissues ProfileDcacheMisses ProfileIcacheMisses ProfileCacheMisses "
                "ProfileBranchMispredictions ProfileStoreInstructions ProfileFpInstructions "
                "ProfileIntegerInstructions Profile2Issue Profile3Issue Profile4Issue "
                "ProfileSpecialInstructions ProfileTotalCycles ProfileIcacheIssues ProfileDcacheAccesses "
                "ProfileMemoryBarrierCycles ProfileLoadLinkedIssues ProfileMaximum ProfileUnhaltedCoreCycles "
                "ProfileInstructionRetired ProfileUnhaltedReferenceCycles ProfileLLCReference "
                "ProfileLLCMisses ProfileBranchInstructionRetired ProfileBranchMispredictsRetired").split()
PROFILE_TIME_UNIT_NS = 100  # ProfileTime's interval is in 100 ns units

SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME = 1 << 0, 1 << 1, 1 << 2
SAMPLE_CALLCHAIN, SAMPLE_CPU, SAMPLE_PERIOD = 1 << 5, 1 << 7, 1 << 8
SAMPLE_IDENTIFIER = 1 << 16
SAMPLE_TYPE = (SAMPLE_IDENTIFIER | SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD
               | SAMPLE_CALLCHAIN)
FORMAT_ID, FORMAT_LOST = 1 << 2, 1 << 4

# perf_event_attr's flag bits, as perf record sets them for a command
ATTR_DISABLED, ATTR_INHERIT, ATTR_MMAP, ATTR_COMM = 1 << 0, 1 << 1, 1 << 8, 1 << 9
ATTR_ENABLE_ON_EXEC, ATTR_TASK, ATTR_SAMPLE_ID_ALL = 1 << 12, 1 << 13, 1 << 18
ATTR_EXCLUDE_GUEST, ATTR_MMAP2, ATTR_COMM_EXEC = 1 << 20, 1 << 23, 1 << 24
ATTR_CONTEXT_SWITCH, ATTR_BUILD_ID = 1 << 26, 1 << 34
ATTR_FLAGS = (ATTR_DISABLED | ATTR_INHERIT | ATTR_MMAP | ATTR_COMM | ATTR_ENABLE_ON_EXEC | ATTR_TASK
              | ATTR_SAMPLE_ID_ALL | ATTR_EXCLUDE_GUEST | ATTR_MMAP2 | ATTR_COMM_EXEC | ATTR_BUILD_ID)

RECORD_LOST, RECORD_COMM, RECORD_EXIT, RECORD_FORK = 2, 3, 4, 7
RECORD_SAMPLE, RECORD_MMAP2, RECORD_SWITCH_CPU_WIDE = 9, 10, 15
MISC_KERNEL, MISC_USER = 1, 2
MISC_COMM_EXEC = 1 << 13
MISC_SWITCH_OUT = 1 << 13
MISC_MMAP_BUILD_ID = 1 << 14

CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
PID_ALL = 0xFFFFFFFF  # -1: the kernel's mapping belongs to every process
PROT_READ_EXEC, MAP_PRIVATE = 5, 2
KERNEL_DSO = "[kernel.kallsyms]"
KERNEL_MAP = KERNEL_DSO + "_text"
ANY_TIME = 1 << 64  # after every TSC


class Event:
    """One perf_event_attr: the samples of one KPROFILE_SOURCE, as perf names
    the event (type, config, name), the sampling period and its ids, one per
    CPU."""

    def __init__(self, source, period, ids, switches=False):
        self.name, self.type, self.config = perf_event(source)
        self.pmu, self.pmu_type = PMU_TYPES[self.type]
        self.period, self.ids = period, ids
        self.flags = ATTR_FLAGS | (ATTR_CONTEXT_SWITCH if switches else 0)

    def attr(self):
        head = struct.pack("<IIQQQQQ", self.type, ATTR_SIZE, self.config, self.period, SAMPLE_TYPE,
                           FORMAT_ID | FORMAT_LOST, self.flags)
        return head + b"\0" * (ATTR_SIZE - len(head))

    def id_of(self, cpu):
        return self.ids[cpu % len(self.ids)]


def perf_event(source):
    """(name, type, config) of a KPROFILE_SOURCE, or of the off-CPU samples."""
    if source == profdata.OFFCPU_SOURCE:
        return "offcpu-time", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT
    if source in PERF_EVENTS:
        return PERF_EVENTS[source]
    name = SOURCE_NAMES[source] if source < len(SOURCE_NAMES) else "source%d" % source
    return name, PERF_TYPE_RAW, source


def events_of(p, default_period):
    """{source: Event} for every source with samples, ids numbered from 1
    (an event's ids follow the previous one's); each period is the export's
    interval for the source (ProfileTime's in ns), else DEFAULT_PERIOD (or
    what it returns, when it is a function)."""
    ncpus = p.ncpus or highest_cpu(p) + 1
    out = {}
    for k, source in enumerate(sorted(sample_sources(p)) or [0]):
        period = p.sources.get(source, 0) * (PROFILE_TIME_UNIT_NS if source == 0 else 1)
        if not period:  # DEFAULT_PERIOD may be a function, called only when a source needs it
            period = default_period() if callable(default_period) else default_period
        ids = list(range(k * ncpus + 1, (k + 1) * ncpus + 1))
        out[source] = Event(source, period, ids, switches=bool(p.cswitches))
    return out


def all_samples(p):
    """The samples and the off-CPU samples (OffCpu: the same fields, more)."""
    return p.samples + p.offcpu


# A recording read with samples="stream" (recording.StreamedSamples) keeps its
# samples on disk and says what these need of them without a pass over them.

def streamed(p):
    """P's StreamedSamples, or None when its samples are a list."""
    return p.samples if hasattr(p.samples, "entries") else None


def highest_cpu(p):
    """The highest CPU of P's samples (not the off-CPU ones), 0 without any."""
    stream = streamed(p)
    return max(stream.max_cpu if stream is not None else max([s.cpu for s in p.samples] + [0]), 0)


def sample_sources(p):
    stream = streamed(p)
    if stream is not None:
        return stream.sources | {o.source for o in p.offcpu}
    return {s.source for s in all_samples(p)}


def distinct_frames(p):
    """The frames lists of P's samples, each once (a recording's samples share them)."""
    stream = streamed(p)
    out = dict(stream.frames) if stream is not None else {}
    out.update((id(s.frames), s.frames) for s in (p.offcpu if stream is not None else all_samples(p)))
    return out.values()


def sample_rows(p):
    """(tsc, cpu, pid, tid) of each sample (not the off-CPU ones), in P's order."""
    stream = streamed(p)
    if stream is not None:
        return stream.rows()
    return ((s.tsc, s.cpu, s.pid, s.tid) for s in p.samples)


# --- records ---------------------------------------------------------------------


def _padded(text):
    """A NUL-terminated string padded to a multiple of 8 bytes."""
    raw = text.encode("utf-8") + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


def _record(rtype, misc, body):
    size = 8 + len(body)
    if size > 0xFFFF:
        raise ValueError("perf record of %d bytes" % size)
    return struct.pack("<IHH", rtype, misc, size) + body


def sample_id(pid, tid, time_ns, cpu, ident):
    """The sample_id_all trailer of a record that is not a sample, for
    TID | TIME | CPU | IDENTIFIER: pid, tid, time, cpu, res, id."""
    return struct.pack("<IIQIIQ", pid, tid, time_ns, cpu, 0, ident)


def comm_record(pid, tid, name, trailer, exec_=False):
    body = struct.pack("<II", pid, tid) + _padded(name[:15]) + trailer
    return _record(RECORD_COMM, MISC_COMM_EXEC if exec_ else 0, body)


def task_record(rtype, pid, ppid, tid, ptid, time_ns, trailer):
    """FORK or EXIT: pid, ppid, tid, ptid, time."""
    return _record(rtype, 0, struct.pack("<IIIIQ", pid, ppid, tid, ptid, time_ns) + trailer)


def mmap2_record(pid, tid, addr, length, pgoff, build_id, filename, misc, trailer):
    """MMAP2 carrying a build-id (PERF_RECORD_MISC_MMAP_BUILD_ID): the id's
    size, two reserved fields and the id in 20 bytes where maj, min, ino and
    ino_generation would be; prot, flags, the file name."""
    body = struct.pack("<IIQQQ", pid, tid, addr, length, pgoff)
    body += struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
    body += struct.pack("<II", PROT_READ_EXEC, MAP_PRIVATE) + _padded(filename) + trailer
    return _record(RECORD_MMAP2, misc | (MISC_MMAP_BUILD_ID if build_id else 0), body)


SAMPLE_HEAD = struct.Struct("<IHHQQIIQIIQ")  # the record's header, then the body up to nr


def chain_bytes(frames):
    """(ip, nr and the chain as perf's SAMPLE has them, the record's size) of a sample's frames."""
    kernel = [a for space, a, _, _ in frames if space == "k"]
    user = [a for space, a, _, _ in frames if space == "u"]
    chain = ([CONTEXT_KERNEL] + kernel if kernel else []) + ([CONTEXT_USER] + user if user else [])
    size = SAMPLE_HEAD.size + 8 + 8 * len(chain)
    if size > 0xFFFF:
        raise ValueError("perf record of %d bytes" % size)
    return frames[0][1], struct.pack("<Q%dQ" % len(chain), len(chain), *chain), size


def sample_record(sample, time_ns, period, ident):
    """SAMPLE: identifier, ip, pid/tid, time, cpu/res, period, nr and the chain."""
    ip, chain, size = chain_bytes(sample.frames)
    return SAMPLE_HEAD.pack(RECORD_SAMPLE, MISC_KERNEL if sample.mode == "k" else MISC_USER, size, ident, ip,
                            sample.pid, sample.tid, time_ns, sample.cpu, 0, period) + chain


def lost_record(ident, count, trailer):
    return _record(RECORD_LOST, 0, struct.pack("<QQ", ident, count) + trailer)


def switch_record(out, other_pid, trailer):
    """SWITCH_CPU_WIDE: the thread switched to (out) or from (in)."""
    return _record(RECORD_SWITCH_CPU_WIDE, MISC_SWITCH_OUT if out else 0,
                   struct.pack("<II", other_pid, other_pid) + trailer)


# --- the ELF files, with build-ids ----------------------------------------------


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


def build_id_note(build_id):
    """An ELF note section's bytes: NT_GNU_BUILD_ID (3), owner "GNU"."""
    return struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id


def with_build_id(elf, out_dir, name=None):
    """(path, build-id): a copy of ELF in OUT_DIR (as NAME) with a
    .note.gnu.build-id section holding the SHA-1 of ELF's bytes."""
    with open(elf, "rb") as f:
        build_id = hashlib.sha1(f.read()).digest()
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, name or os.path.basename(elf))
    with tempfile.NamedTemporaryFile(suffix=".note") as note:
        note.write(build_id_note(build_id))
        note.flush()
        subprocess.run(["objcopy", "--add-section", ".note.gnu.build-id=" + note.name,
                        "--set-section-flags", ".note.gnu.build-id=readonly", elf, out],
                       check=True, capture_output=True)
    return os.path.abspath(out), build_id


def load_headers(path):
    """Makes the ELF file PATH say its headers are loaded below its text, in
    a read-only PT_LOAD that takes the place of PT_GNU_STACK, first in the
    table. The guest's programs put the text at file offset 0x1000 and map
    no headers, so a process maps the text from that offset; hotspot's
    parser (perfparser app/perfsymboltable.cpp) takes a mapping's address
    less its file offset for where the ELF's first PT_LOAD starts, and with
    no headers segment reports the file again for every address ("address
    range overlaps an existing module"). Symbols and code are unchanged."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        phdrs = [bytes(data[phoff + i * phentsize:phoff + (i + 1) * phentsize]) for i in range(phnum)]
        kinds = [struct.unpack_from("<I", ph)[0] for ph in phdrs]
        PT_LOAD, PT_GNU_STACK = 1, 0x6474E551
        if PT_GNU_STACK not in kinds or PT_LOAD not in kinds:
            return
        _, _, offset, vaddr = struct.unpack_from("<IIQQ", phdrs[kinds.index(PT_LOAD)])
        if offset == 0 or vaddr < offset:
            return
        head = struct.pack("<IIQQQQQQ", PT_LOAD, 4, 0, vaddr - offset, vaddr - offset, offset, offset, 0x1000)
        table = [head] + [ph for ph, k in zip(phdrs, kinds) if k != PT_GNU_STACK]
        data[phoff:phoff + phnum * phentsize] = b"".join(ph.ljust(phentsize, b"\0") for ph in table)
        f.seek(0)
        f.write(data)


def kallsyms_path(build_id):
    return os.path.join(os.path.expanduser("~"), ".debug", KERNEL_DSO, build_id.hex(), "kallsyms")


def cache_kernel(path, build_id=None):
    """Adds the kernel copy PATH to perf's build-id cache and its symbols as
    a kallsyms file beside it; False when perf is not installed (the kallsyms
    file is written all the same)."""
    if build_id:
        out = kallsyms_path(build_id)
        try:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as f:
                f.writelines("%016x T %s\n" % (a, n) for a, n in profdata.elf_functions(path))
        except OSError as e:
            print("profview: cannot write %s (%s): hotspot needs --kallsyms for kernel frames" % (out, e))
    if not shutil.which("perf"):
        return False
    subprocess.run(["perf", "buildid-cache", "-a", path], check=True, capture_output=True)
    return True


# --- the data section --------------------------------------------------------------


class Recording:
    """A Profile's records for perf: the images (path and build-id each),
    the events by source (records other than samples name the first) and
    the time base."""

    def __init__(self, p, images, events):
        self.p, self.images, self.events = p, images, events
        self.event = events[min(events)]
        self.hz = p.tsc_hz or 10 ** 9

    def ns(self, tsc):
        return tsc * 10 ** 9 // self.hz

    def trailer(self, pid, tid, time_ns, cpu=0):
        return sample_id(pid, tid, time_ns, cpu, self.event.id_of(cpu))


def process_names(p):
    """{pid: name}: each process's image name, the idle thread "swapper" (as
    perf names pid 0)."""
    names = {0: "swapper"}
    for pid, name, _, _ in p.images:
        if pid:
            names.setdefault(pid, name)
    return names


def kernel_records(r):
    """The kernel's MMAP2 (pid -1, once), as perf record synthesizes it."""
    out = []
    for pid, name, base, end in r.p.images:
        if pid == 0 and name in r.images:
            path, build_id = r.images[name]
            t = r.ns(r.p.map_tsc.get(0, 0))
            out.append((t, 0, mmap2_record(PID_ALL, 0, base, end - base, base, build_id, KERNEL_MAP,
                                           MISC_KERNEL, r.trailer(PID_ALL, 0, t))))
            break
    return out


def seen(p):
    """{(pid, tid): (first, last) sample TSC}, in one pass over the samples
    (a StreamedSamples has its own: the off-CPU samples join a copy)."""
    stream = streamed(p)
    out = {k: list(v) for k, v in stream.seen.items()} if stream is not None else {}
    for s in p.offcpu if stream is not None else all_samples(p):
        v = out.get((s.pid, s.tid))
        if v is None:
            out[(s.pid, s.tid)] = [s.tsc, s.tsc]
        elif s.tsc < v[0]:
            v[0] = s.tsc
        elif s.tsc > v[1]:
            v[1] = s.tsc
    return out


def last_seen(p, pid, tid, samples_seen=None):
    """The TSC of a thread's last sample or switch (in or out)."""
    if samples_seen is None:
        samples_seen = seen(p)
    times = [samples_seen[(pid, tid)][1]] if (pid, tid) in samples_seen else []
    times += [o.tsc + o.off_ns * (p.tsc_hz or 10 ** 9) // 10 ** 9 for o in p.offcpu if o.pid == pid]
    times += [c[1] for c in p.cswitches if tid == pid and pid in (c[2], c[3])]
    return max(times)


def thread_records(r, pid, tids):
    """A process's FORK one nanosecond before its image was mapped (readers
    give the child its parent's maps at the fork), COMM and MMAP2 then, and
    each thread's EXIT one nanosecond after its last sample or switch (the
    log does not say when a process ends)."""
    p = r.p
    first = min(r.seen[(pid, tid)][0] for tid in tids)
    t = r.ns(min(p.map_tsc.get(pid, first), first))
    parent = p.parents.get(pid, 0)
    name = process_names(p).get(pid, "pid%d" % pid)
    out = []
    for tid in sorted(tids):
        ppid, ptid = (parent, parent) if tid == pid else (pid, pid)
        out.append((t - 1, 1, task_record(RECORD_FORK, pid, ppid, tid, ptid, t - 1, r.trailer(pid, tid, t - 1))))
        out.append((t, 2, comm_record(pid, tid, name, r.trailer(pid, tid, t), exec_=tid == pid)))
        end = r.ns(last_seen(p, pid, tid, r.seen)) + 1
        out.append((end, 9, task_record(RECORD_EXIT, pid, ppid, tid, ptid, end, r.trailer(pid, tid, end))))
    for ipid, image, base, end in p.images:
        if ipid == pid and image in r.images:
            path, build_id = r.images[image]
            out.append((t, 3, mmap2_record(pid, pid, base, end - base, elf_file_offset(path, base), build_id,
                                           path, MISC_USER, r.trailer(pid, pid, t))))
            break
    return out


def process_records(r):
    """Every process's records: the idle thread's name, and the rest for
    each process with samples."""
    r.seen = seen(r.p)
    tids = collections.defaultdict(set)
    for pid, tid in r.seen:
        tids[pid].add(tid)
    out = []
    for pid in sorted(tids):
        if pid == 0:
            for tid in sorted(tids[0]):
                out.append((0, 2, comm_record(0, tid, "swapper", r.trailer(0, tid, 0))))
        else:
            out += thread_records(r, pid, tids[pid])
    return out


class SampleRecords:
    """The SAMPLE records of every sample of a list, made when written:
    streams gives each one's place in the data section, record its bytes.
    Each frames list's chain is packed once (a recording's samples share one
    list per distinct chain), each source and CPU's identifier found once;
    the data section never holds every sample's bytes at once."""

    def __init__(self, r):
        self.r, self.chains, self.idents = r, {}, {}

    def streams(self):
        """[iterator of (ns << 4 | 5, index, record)]: every sample in one
        stream, in data_section's order (the time, then the order at one
        time, then the index)."""
        hz, order, i, chains = self.r.hz, [], 0, self.chains
        append = order.append
        for s in self.r.p.samples:
            append(((s.tsc * 10 ** 9 // hz) << 4 | 5, i))  # r.ns, inline
            i += 1
            if id(s.frames) not in chains:  # each chain packed before anything is written: too long a one fails first
                chains[id(s.frames)] = chain_bytes(s.frames)
        order.sort(key=operator.itemgetter(0))  # stable: the index orders one time's samples
        return [self.records(order)]

    def records(self, order):
        samples, ident, chains = self.r.p.samples, self.ident, self.chains
        for key, i in order:
            s = samples[i]
            yield key, i, sample_bytes(chains[id(s.frames)], s.mode == "k", ident(s.source, s.cpu), s.pid, s.tid,
                                       key >> 4, s.cpu)

    def ident(self, source, cpu):
        """(event id, period) of a source's samples on CPU."""
        ident = self.idents.get((source, cpu))
        if ident is None:
            event = self.r.events[source]
            ident = self.idents[(source, cpu)] = (event.id_of(cpu), event.period)
        return ident


class StreamedSampleRecords(SampleRecords):
    """SampleRecords of a StreamedSamples: the samples read back from its
    file in time order, a stream per list of its sorted stretches, each
    sample's record made from its entry and its chain's bytes (packed once
    per chain, before)."""

    def streams(self):
        stream = self.r.p.samples
        self.chains = {fid: chain_bytes(frames) for fid, frames in stream.frames.items()}
        for source in stream.sources:
            for cpu in range(stream.max_cpu + 1):
                self.ident(source, cpu)
        return [self.records(ranges) for ranges in stream.sorted_stretches()]

    def records(self, ranges):
        """(ns << 4 | 5, index, record) of the samples of RANGES, in time order."""
        hz, entries, chains, idents = self.r.hz, self.r.p.samples.entries, self.chains, self.idents
        pack, misc = SAMPLE_HEAD.pack, (MISC_USER, MISC_KERNEL)
        for first, end in ranges:
            i = first
            for tsc, cpu, pid, tid, source, fid, kernel, _trunc in entries(first, end):
                t = tsc * 10 ** 9 // hz  # r.ns, inline
                ip, chain, size = chains[fid]
                ident, period = idents[source, cpu]
                # sample_bytes, inline: once per sample
                yield t << 4 | 5, i, pack(RECORD_SAMPLE, misc[kernel], size, ident, ip, pid, tid, t, cpu, 0,
                                          period) + chain
                i += 1


def sample_bytes(chain, kernel, ident, pid, tid, t, cpu):
    """A sample's SAMPLE record: CHAIN (chain_bytes of its frames), IDENT
    (its event's id and period), at time T (ns)."""
    ip, chain, size = chain
    return SAMPLE_HEAD.pack(RECORD_SAMPLE, MISC_KERNEL if kernel else MISC_USER, size, ident[0], ip,
                            pid, tid, t, cpu, 0, ident[1]) + chain


def offcpu_records(r):
    """The off-CPU samples' SAMPLE records; period: the time away."""
    out = []
    for o in r.p.offcpu:
        event = r.events[o.source]
        out.append((r.ns(o.tsc), 5, sample_record(o, r.ns(o.tsc), o.off_ns, event.id_of(o.cpu))))
    return out


def lost_records(r):
    """LOST: each `lost` line at its time (the CPU's last sample's when the
    export has none), in the name of the thread that CPU last sampled."""
    last = last_before(r.p)
    out = []
    for k, (cpu, count, tsc) in enumerate(r.p.lost_records):
        tsc = tsc or (last[k][0] if k in last else 0)
        pid, tid = last[k][2:] if k in last else (0, 0)
        t = r.ns(tsc)
        out.append((t, 6, lost_record(r.event.id_of(cpu), count, r.trailer(pid, tid, t, cpu))))
    return out


def last_before(p):
    """{k: (tsc, cpu, pid, tid)} of the sample each lost record K is charged
    to: its CPU's latest sample at or before its time (any time when it has
    none), the last read of those at that time; in one pass over the samples."""
    times = collections.defaultdict(list)  # cpu -> [(time, k)] sorted; no time: any time
    for k, (cpu, _count, tsc) in enumerate(p.lost_records):
        times[cpu].append((tsc or ANY_TIME, k))
    if not times:
        return {}
    for t in times.values():
        t.sort()
    # Each sample is the best so far (the latest, the last read at one time)
    # of the first lost record at or after it; a record's own is then the
    # best of its bucket and the earlier ones of its CPU.
    ends = {cpu: [t for t, _ in ts] for cpu, ts in times.items()}
    best = {}  # (cpu, bucket) -> (tsc, index, pid, tid)
    for i, (tsc, cpu, pid, tid) in enumerate(sample_rows(p)):
        at = ends.get(cpu)
        if at is not None:
            b = bisect.bisect_left(at, tsc)
            if b < len(at):
                now = best.get((cpu, b))
                if now is None or tsc >= now[0]:
                    best[(cpu, b)] = (tsc, i, pid, tid)
    out = {}
    for cpu, ts in times.items():
        last = None
        for b, (_, k) in enumerate(ts):
            now = best.get((cpu, b))
            if now is not None and (last is None or now[:2] > last[:2]):
                last = now
            if last is not None:
                out[k] = (last[0], cpu, last[2], last[3])
    return out


def switch_records(r):
    """SWITCH_CPU_WIDE out of the old thread and into the new one at each
    `cswitch` line (the guest's threads are its processes: tid = pid)."""
    out = []
    for cpu, tsc, old, new, _ in r.p.cswitches:
        t = r.ns(tsc)
        out.append((t, 7, switch_record(True, new, r.trailer(old, old, t, cpu))))
        out.append((t, 8, switch_record(False, old, r.trailer(new, new, t, cpu))))
    return out


def data_section(r):
    """The records in time order (at one time: the kernel's map, FORK, COMM,
    MMAP2, samples, LOST, switches, EXIT; then as listed, the samples first),
    as an iterator of byte strings made as it is read. The samples' streams,
    each in that order, and the other records are merged: every item starts
    (time << 4 | order, index), unique, so no two compare further."""
    samples = (StreamedSampleRecords if streamed(r.p) is not None else SampleRecords)(r)
    others = kernel_records(r) + process_records(r) + offcpu_records(r) + lost_records(r) + switch_records(r)
    n = len(r.p.samples)
    others = sorted((t << 4 | order, n + i, rec) for i, (t, order, rec) in enumerate(others))
    out = []
    for _key, _index, rec in heapq.merge(*samples.streams(), others):
        out.append(rec)
        if len(out) == 4096:
            yield b"".join(out)
            out = []
    yield b"".join(out)


# --- the file ---------------------------------------------------------------------


def image_files(p, syms, out_dir):
    """{image name: (absolute path of a copy with a build-id, build-id)} for
    every image with an ELF file; the kernel's copy is OUT_DIR/kernel.elf."""
    out = {}
    for _, name, _, _ in p.images:
        path = syms.path(name)
        if name in out or path is None or path.endswith(".nm"):
            continue
        out[name] = with_build_id(path, out_dir, "kernel.elf" if name == "kernel" else name)
        if name != "kernel":
            load_headers(out[name][0])
    return out


def build_ids(p, images):
    """[(build-id, DSO name, is the kernel)] of the images with samples."""
    hit = {image for frames in distinct_frames(p) for _, _, image, _ in frames}
    out = []
    for name, (path, build_id) in sorted(images.items()):
        if name in hit:
            out.append((build_id, KERNEL_DSO if name == "kernel" else path, name == "kernel"))
    return out


def header_info(p, cmdline):
    """The features' facts: the guest's CPU as its export names it."""
    ncpus = p.ncpus or highest_cpu(p) + 1
    return {"host": "pmc", "release": "pmc", "version": "6.1 (pmc profview)", "arch": "x86_64",
            "ncpus": ncpus, "cpudesc": p.cpu_desc, "cpuid": p.cpu_id, "cmdline": cmdline}


def perf_data(p, syms, period=1, images=None, cmdline=("profile", "record")):
    """The bytes of a perf.data file holding P's samples, an event per
    source; PERIOD: the period of a source the export gives no interval for
    (perf report's event count is the periods' sum). IMAGES: image_files'
    copies with build-ids; without them the MMAP2 records name the ELF files
    as they are, with no build-id (perf then names no kernel frame right)."""
    out = io.BytesIO()
    write_perf_data(out, p, syms, period, images, cmdline)
    return out.getvalue()


def write_perf_data(f, p, syms, period=1, images=None, cmdline=("profile", "record")):
    """perf_data's file written to F, the data section a piece at a time."""
    with profdata.no_gc():
        _write_perf_data(f, p, syms, period, images, cmdline)


def _write_perf_data(f, p, syms, period, images, cmdline):
    events = events_of(p, period)
    images = images or plain_images(p, syms)
    order = [events[k] for k in sorted(events)]
    ids = b"".join(struct.pack("<%dQ" % len(e.ids), *e.ids) for e in order)
    attrs_off = HEADER_SIZE + len(ids)
    entries, at = b"", HEADER_SIZE
    for e in order:
        entries += e.attr() + struct.pack("<QQ", at, 8 * len(e.ids))
        at += 8 * len(e.ids)
    data_off = attrs_off + len(entries)
    features = perfheader.sections(header_info(p, list(cmdline)), order, build_ids(p, images))

    def header(size):
        bitmap, tail = perfheader.layout(features, data_off + size)
        head = MAGIC + struct.pack("<QQ", HEADER_SIZE, len(entries) // len(order))
        return head + struct.pack("<QQQQQQ", attrs_off, len(entries), data_off, size, 0, 0) + bitmap, tail

    # The data section is written as it is made; its size, known at its end,
    # goes into the header written again over the first.
    start = f.tell()
    f.write(header(0)[0] + ids + entries)
    size = 0
    for chunk in data_section(Recording(p, images, events)):
        f.write(chunk)
        size += len(chunk)
    head, tail = header(size)
    f.write(tail)
    end = f.tell()
    f.seek(start)
    f.write(head)
    f.seek(end)


def plain_images(p, syms):
    """{image: (absolute path, no build-id)}: the ELF files as they are."""
    out = {}
    for _, name, _, _ in p.images:
        path = syms.path(name)
        if path and not path.endswith(".nm"):
            out.setdefault(name, (os.path.abspath(path), b""))
    return out
