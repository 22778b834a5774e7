"""A recording as `profile record --host` leaves it on the host (build/recording.bin):
the binary records of the guest's PMC log, read straight into a Profile.

The layout (docs/pmc-log.md, "Recordings on the host"): a header record
(type 0x101: magic, versions, the CPU), then the records NtPmcReadLog hands
out (kernel/lib/abi/pmclog.h), then the recorder's trailer (type 0x100, with
the driver's statistics and the bytes it saved). Every record starts with
struct pmclog_header {u16 type, u16 cpu, u32 size, u64 tsc}, is a multiple
of 8 bytes long, little-endian.

A recording cut short (QEMU killed, the disk full) or damaged keeps every
complete record: the reader skips what it cannot parse, finds the next
record that can be, and counts the bytes it skipped (Recording.skipped).
Each distinct chain is symbolized once; the samples share its frames.
"""
import functools
import heapq
import mmap
import os
import struct
import sys
import tempfile
import time

import profdata

RECORDING, TRAILER = 0x101, 0x100
SAMPLE, MAP, LOST, INITIALIZE, CSWITCH, OFFCPU, ONCPU = 1, 2, 6, 8, 9, 11, 12
KNOWN = {SAMPLE, MAP, 3, 4, 5, LOST, 7, INITIALIZE, CSWITCH, 10, OFFCPU, ONCPU, TRAILER, RECORDING}
MAGIC = b"PMCREC\r\n"
VERSION = 1  # SAMPLELOG_RECORDING_VERSION (userland/include/samplelog.h)
SAMPLE_USER, SAMPLE_TRUNC = 0x1, 0x2
HEADER = struct.Struct("<HHIQ")
CHAIN_HEAD = struct.Struct("<IIIHHHHI")  # pmclog_sample / pmclog_offcpu after the header
SAMPLE_HEAD = struct.Struct("<HHIQIIIHHHHI")  # the header and CHAIN_HEAD: 40 bytes
TRAILER_SIZE = 2280  # sizeof(struct samplelog_trailer)
PROGRESS_BYTES = 64 << 20  # a progress line after each this many bytes read
DROP_BYTES = 8 << 20  # the pages read let go of after each this many bytes


class Recording:
    """What the reader found besides the profile: its problems, in words."""

    def __init__(self):
        self.skipped = 0  # bytes of damaged or incomplete records
        self.stretches = 0  # separate damaged stretches
        self.records = 0
        self.trailer = None  # (source, interval, command, bytes saved, delivered, logged, lost)
        self.start = 0  # where the recording read begins (its header), and its records
        self.records_at = 0
        self.trailer_at = 0
        self.recordings = 0
        self.chosen = False  # one recording of several was asked for by number
        self.notes = []


def _plausible(data, pos, end):
    """The size of a well-formed record at POS, or 0."""
    if pos + 16 > end:
        return 0
    rtype, _cpu, size, _tsc = HEADER.unpack_from(data, pos)
    if rtype not in KNOWN or size < 16 or size % 8 or pos + size > end:
        return 0
    if rtype in (SAMPLE, OFFCPU):
        if size < 40:
            return 0
        nframes, nkernel = struct.unpack_from("<HH", data, pos + 32)
        if size != 40 + 8 * nframes or nkernel > nframes:
            return 0
    if rtype == TRAILER and size != TRAILER_SIZE:
        return 0
    return size


def _resync(data, pos, end):
    """The next position from POS on (8 at a time) where a well-formed record starts, or END."""
    pos += 8
    while pos < end and not _plausible(data, pos, end):
        pos += 8
    return min(pos, end)


class StreamedSamples:
    """A recording's samples kept on disk, not in memory: a fixed-size entry
    per sample in a temporary file, in the order read, and what perf.data's
    writer needs of them all (the sources, the highest CPU, each thread's
    first and last sample). Memory grows with the distinct chains and the
    stretches in time order, not with the samples; iterating makes a
    profdata.Sample at a time."""

    # tsc, cpu, pid, tid, source, the id of the chain's frames list, in the kernel, truncated
    ENTRY = struct.Struct("<QIIIIQBB6x")
    ROW = struct.Struct("<QIII20x")  # an entry's tsc, cpu, pid, tid
    BLOCK = 4096  # entries read back at a time

    def __init__(self):
        self.file = tempfile.TemporaryFile(prefix="profview-samples-")
        self.reset()

    def __del__(self):
        self.file.close()

    def reset(self):
        """Nothing kept (a later recording in the file replaces the earlier)."""
        self.file.seek(0)
        self.file.truncate()
        self.buf, self.count, self.written = bytearray(), 0, 0
        self.frames = {}  # id -> frames list, of the samples' chains (finish fills it)
        self.runs = []  # [first index, first tsc, last tsc] of each stretch in time order
        self.sources, self.max_cpu, self.seen = set(), -1, {}  # seen: {(pid, tid): [first, last] tsc}
        self.add, self.close = self.adder()

    def adder(self):
        """(add, close): add(sample) keeps one sample, the fields of a
        profdata.Sample as a tuple; close() ends the samples. Closures over
        what they touch: add runs once per sample."""
        pack, buf, runs, seen, flush = self.ENTRY.pack, self.buf, self.runs, self.seen, self.flush
        last, count = -1, 0

        def add(sample):
            nonlocal last, count
            tsc, cpu, pid, tid, mode, frames, trunc, source = sample
            # The reader keeps each chain's frames list while the samples are read: its id names it.
            buf.extend(pack(tsc, cpu, pid, tid, source, id(frames), mode == "k", trunc))
            if tsc < last:  # the rings are drained CPU by CPU: time goes back at each CPU's turn
                runs[-1][2] = last
                runs.append([count, tsc, tsc])
            elif not runs:
                runs.append([0, tsc, tsc])
            last = tsc
            count += 1
            v = seen.get((pid, tid))
            if v is None:
                seen[(pid, tid)] = [tsc, tsc]
            elif tsc < v[0]:
                v[0] = tsc
            elif tsc > v[1]:
                v[1] = tsc
            if len(buf) >= 1 << 20:
                flush()

        def close():
            """The count and the last run's end, once every sample is in."""
            if runs:
                runs[-1][2] = last
            self.count = count

        return add, close

    def flush(self):
        """The entries so far to the file (the buffer emptied in place: add holds it)."""
        self.file.seek(self.written)
        self.file.write(self.buf)
        self.written += len(self.buf)
        del self.buf[:]

    def finish(self, counts, chains):
        """Everything written; COUNTS (the reader's, keyed (frames id, pid,
        cpu, mode, source)) give the sources, the CPUs and the chains
        (CHAINS' frames lists) without a pass over the samples."""
        self.close()
        self.flush()
        self.file.flush()
        by_id = {id(frames): frames for frames in chains.values()}
        for fid, _pid, cpu, _mode, source in counts:
            self.sources.add(source)
            self.max_cpu = max(self.max_cpu, cpu)
            self.frames[fid] = by_id[fid]

    def entries(self, first=0, end=None, fields=ENTRY):
        """The entries (as FIELDS unpacks them) from index FIRST to END, read a block at a time."""
        end = self.count if end is None else end
        size, fd = self.ENTRY.size, self.file.fileno()
        for at in range(first, end, self.BLOCK):
            yield from fields.iter_unpack(os.pread(fd, size * (min(end, at + self.BLOCK) - at), size * at))

    def rows(self):
        """(tsc, cpu, pid, tid) of every sample, in the order read."""
        return self.entries(fields=self.ROW)

    def sorted_stretches(self):
        """[(first, end) index ranges]: lists of runs, each list in time order
        as a whole, so that merging the lists puts every sample in order.
        Each run joins the list whose last sample is the latest one not after
        the run's first (a CPU's next turn follows its last): as many lists as
        CPUs, for a recording drained CPU by CPU."""
        lists = []  # [last tsc, [(first, end)]]
        bounds = [r[0] for r in self.runs[1:]] + [self.count]
        for (first, first_tsc, last_tsc), end in zip(self.runs, bounds):
            fits = [l for l in lists if l[0] <= first_tsc]
            if fits:
                best = max(fits, key=lambda l: l[0])
                best[0] = last_tsc
                best[1].append((first, end))
            else:
                lists.append([last_tsc, [(first, end)]])
        return [ranges for _, ranges in lists]

    def in_time_order(self):
        """The samples as profdata.Samples, in time order (the order read at one time)."""
        def stretches(ranges):
            for first, end in ranges:
                for i, e in enumerate(self.entries(first, end), first):
                    yield e[0], i, e
        for _tsc, _i, e in heapq.merge(*map(stretches, self.sorted_stretches())):
            yield self.sample(e)

    def sample(self, entry):
        tsc, cpu, pid, tid, source, fid, kernel, trunc = entry
        return profdata.Sample(tsc, cpu, pid, tid, "k" if kernel else "u", self.frames[fid], bool(trunc), source)

    def __len__(self):
        return self.count

    def __iter__(self):
        return map(self.sample, self.entries())

    def __getitem__(self, which):
        """A slice of the samples (profdata.Profile.ns takes the first)."""
        first, end, step = which.indices(self.count)
        return [self.sample(e) for e in self.entries(first, end)][::step]


class _Reader:
    """One pass over the bytes into a Profile."""

    def __init__(self, data, syms, title, which=None, keep=True):
        self.data, self.syms, self.title, self.keep = data, syms, title, keep
        self.stream = StreamedSamples() if keep == "stream" else None
        self.which = which  # the recording wanted (0 the first); None: the last
        self.done = False
        self.rec = Recording()
        self.rec.chosen = which is not None
        self.begin()

    def begin(self):
        """Everything read so far forgotten: a later recording in the file replaces it."""
        self.p = profdata.Profile(self.title)
        if not hasattr(self, "chains"):
            self.chains = {}  # (pid, nkernel, truncated, frame bytes) -> the chain's frames list
            self.raw = []  # the samples' fields, when kept
            self.counts = {}  # (id of a chain's frames list, pid, cpu, mode, source) -> samples
        for held in (self.chains, self.raw, self.counts):
            held.clear()  # in place: run() holds them
        if self.stream is not None:
            self.stream.reset()
        self.offs = []  # (OffCpu fields, reason, pid, seq)
        self.ons = {}  # (pid, seq) -> off_ns

    def image_of(self, pid, space, addr):
        want = 0 if space == "k" else pid
        for ipid, name, base, end in self.p.images:
            if ipid == want and base <= addr < end:
                return name
        return "kernel" if space == "k" else None

    def chain(self, pid, nkernel, trunc, raw):
        """The frames list of the distinct chain of frame bytes RAW in PID:
        empty until finish_samples symbolizes it, shared by its samples."""
        key = (pid, nkernel, trunc, raw)
        frames = self.chains.get(key)
        if frames is None:
            frames = self.chains[key] = []
        return frames

    def symbolize(self, key):
        """(frames leaf first as (space, address, image, function), stack root
        first, leaf (image, function)) of a chain, once every image is known:
        the rings are drained CPU by CPU, so a program's map record may come
        after samples of it taken on another CPU."""
        pid, nkernel, trunc, raw = key
        full, named = [], self.named
        for i, (addr,) in enumerate(struct.iter_unpack("<Q", raw)):
            space = "k" if i < nkernel else "u"
            # A frame after the first is a return address, named by the call
            # before it, as the text export's frames are (profdata.py).
            at = addr - 1 if i else addr
            where = (pid if space == "u" else 0, space, addr, i > 0)
            frame = named.get(where)  # the chains share most of their addresses
            if frame is None:
                image = self.image_of(pid, space, at)
                table = self.syms.get(image) if image else None
                func = table.lookup(at)[0] if table else None
                frame = named[where] = (space, addr, image or "?", func or profdata.UNKNOWN)
            full.append(frame)
        # A cut chain has no root of its own, as the guest's folded stacks.
        stack = tuple(profdata.label(image, func) for _, _, image, func in reversed(full))
        return full, stack, (full[0][2], full[0][3])

    def finish_samples(self):
        """The samples and the tables, each distinct chain symbolized once
        (its frames filled in, in the list its samples share)."""
        self.named = {}  # (pid or 0 for the kernel, space, address) -> frame, once every image is known
        p, named = self.p, {}
        for key, frames in self.chains.items():
            full, stack, leaf = self.symbolize(key)
            frames.extend(full)
            named[id(frames)] = (frames, stack, leaf)
        if self.stream is not None:
            self.stream.finish(self.counts, self.chains)
            p.samples = self.stream
        else:  # The raw tuples are a Sample's fields: made Samples in C (Sample._make, without its Python frame).
            p.samples = list(map(functools.partial(tuple.__new__, profdata.Sample), self.raw))
        for (fid, pid, cpu, mode, _source), n in self.counts.items():
            full, stack, leaf = named[fid]
            p.stacks[stack] += n
            p.total += n
            p.self_hits[leaf] += n
            p.addr_hits[(full[0][2], full[0][1])] += n
            p.by_pid[pid][leaf] += n
            p.by_cpu[cpu][leaf] += n
            p.mode_by_pid[pid][mode] += n
            p.mode_by_cpu[cpu][mode] += n

    def other(self, rtype, pos, cpu, size, tsc):
        d, p = self.data, self.p
        if rtype == MAP:
            pid, parent, base, end = struct.unpack_from("<IIQQ", d, pos + 16)
            name = bytes(d[pos + 40:pos + size]).split(b"\0")[0].decode("utf-8", "replace")
            p.images.append((pid, name, base, end))
            p.pid_names.setdefault(pid, name)
            p.parents.setdefault(pid, parent)
            p.map_tsc.setdefault(pid, tsc)
        elif rtype == LOST:
            count, = struct.unpack_from("<Q", d, pos + 16)
            p.lost[cpu] += count
            p.lost_records.append((cpu, count, tsc))
        elif rtype == INITIALIZE:
            _version, p.ncpus, p.tsc_hz = struct.unpack_from("<IIQ", d, pos + 16)
        elif rtype == OFFCPU:
            pid, tid, _pmc, reason, flags, nframes, nkernel, seq = CHAIN_HEAD.unpack_from(d, pos + 16)
            if nframes:
                trunc = bool(flags & SAMPLE_TRUNC)
                frames = self.chain(pid, nkernel, trunc, bytes(d[pos + 40:pos + size]))
                self.offs.append(((tsc, cpu, pid, tid, "k", frames, trunc, profdata.OFFCPU_SOURCE), reason, pid, seq))
        elif rtype == ONCPU:
            pid, _tid, _pmc, seq = struct.unpack_from("<IIII", d, pos + 16)
            self.ons[(pid, seq)], = struct.unpack_from("<Q", d, pos + 40)
        elif rtype == CSWITCH:
            old, new, n, _ = struct.unpack_from("<IIII", d, pos + 16)
            n = min(n, 8)
            events = struct.unpack_from("<8H", d, pos + 32)
            values = struct.unpack_from("<8Q", d, pos + 48)
            p.cswitches.append((cpu, tsc, old, new, list(zip(events[:n], values[:n]))))
        else:
            self.header_or_trailer(rtype, pos, size)

    def header_or_trailer(self, rtype, pos, size):
        d, p = self.data, self.p
        if rtype == RECORDING:
            if self.which is not None and self.rec.recordings == self.which + 1:
                self.done = True  # the one wanted has ended
                return
            self.rec.recordings += 1
            if self.rec.recordings > 1:
                self.begin()
            self.rec.start, self.rec.records_at, self.rec.trailer = pos, pos + size, None
            version, = struct.unpack_from("<I", d, pos + 24)
            if version != VERSION:
                self.rec.notes.append("recording version %d, this reader knows %d" % (version, VERSION))
            cpu = bytes(d[pos + 32:pos + size]).split(b"\0")[0].decode("utf-8", "replace")
            p.cpu_id, _, p.cpu_desc = cpu.partition(" ")
        elif rtype == TRAILER:
            source, _mode, _flags, _notes, interval = struct.unpack_from("<IIIIQ", d, pos + 16)
            ncpus, = struct.unpack_from("<I", d, pos + 40)
            rows = [struct.unpack_from("<QQQ", d, pos + 96 + 32 * c) for c in range(min(ncpus, 64))]
            command = bytes(d[pos + size - 136:pos + size - 8]).split(b"\0")[0].decode("utf-8", "replace")
            saved, = struct.unpack_from("<Q", d, pos + size - 8)
            p.sources[source] = interval
            self.rec.trailer_at = pos
            self.rec.trailer = (source, interval, command, saved, sum(r[0] for r in rows),
                                sum(r[1] for r in rows), sum(r[2] for r in rows))

    def run(self, progress):
        d, end, pos = self.data, len(self.data), 0
        head, sample_head = HEADER.unpack_from, SAMPLE_HEAD.unpack_from
        keep, counts, chains, samples = self.keep, self.counts, self.chains, 0
        append = self.keeper()
        next_note, started = DROP_BYTES, time.monotonic()
        while pos < end:
            # The common case first, inline: a well-formed sample.
            if pos + 40 <= end:
                rtype, cpu, size, tsc, pid, tid, _, source, flags, nframes, nkernel, _ = sample_head(d, pos)
                if rtype == SAMPLE and size == 40 + 8 * nframes and nkernel <= nframes and pos + size <= end:
                    if nframes:
                        trunc = bool(flags & SAMPLE_TRUNC)
                        key = (pid, nkernel, trunc, d[pos + 40:pos + size])
                        frames = chains.get(key)
                        if frames is None:
                            frames = chains[key] = []
                        mode = "u" if flags & SAMPLE_USER else "k"
                        count = (id(frames), pid, cpu, mode, source)
                        counts[count] = counts.get(count, 0) + 1
                        if keep:
                            append((tsc, cpu, pid, tid, mode, frames, trunc, source))
                    samples += 1
                    pos += size
                    if pos >= next_note:
                        next_note = self.progress(pos, next_note, started, progress)
                    continue
            size = _plausible(d, pos, end)
            if not size:
                after = _resync(d, pos, end)
                self.rec.skipped += after - pos
                self.rec.stretches += 1
                pos = after
                continue
            rtype, cpu, _, tsc = head(d, pos)
            self.other(rtype, pos, cpu, size, tsc)
            append = self.keeper()  # a new recording's header starts another
            if self.done:
                break
            self.rec.records += 1
            pos += size
        self.rec.records += samples
        self.finish_samples()
        self.finish_offcpu()
        return self.p, self.rec

    def keeper(self):
        """What keeps a sample (its fields as a tuple): the list, or the stream on disk."""
        return self.stream.add if self.stream is not None else self.raw.append

    def progress(self, pos, next_note, started, say):
        """A line on a long read (when SAY); the position of the next. The
        file's pages read so far leave memory (a mapped file's are read
        again if need be): what stays grows with the chains, not the file."""
        if isinstance(self.data, mmap.mmap):
            self.data.madvise(mmap.MADV_DONTNEED, 0, pos - pos % mmap.PAGESIZE)
        if not say or next_note % PROGRESS_BYTES:
            return next_note + DROP_BYTES
        print("profview: read %d of %d MB, %d samples, %d distinct chains (%.1f s)" %
              (pos >> 20, len(self.data) >> 20, sum(self.counts.values()), len(self.chains), time.monotonic() - started),
              file=sys.stderr)
        return next_note + DROP_BYTES

    def finish_offcpu(self):
        p = self.p
        for fields, reason, pid, seq in self.offs:
            off_ns = self.ons.get((pid, seq))
            if off_ns is None:
                continue  # still away when the recording ended
            o = profdata.OffCpu(*fields, off_ns, reason)
            p.offcpu.append(o)
            stack = [profdata.label(image, func) for _, _, image, func in reversed(o.frames)]
            stack += ["[%s]" % profdata.reason_name(reason)]
            p.off_stacks[tuple(stack)] += (off_ns + 500) // 1000


def problems(data, rec):
    """What a person should know about the file, as lines: damage, a missing
    trailer, records the guest saved that the file does not hold."""
    out = list(rec.notes)
    if rec.recordings > 1 and not rec.chosen:
        out.append("the file holds %d recordings: the last is used" % rec.recordings)
    if not rec.recordings:
        out.append("no recording header at the start: not from `profile record --host`, or its start is lost")
    if rec.skipped:
        out.append("skipped %d bytes the reader could not parse (%d stretch%s): every complete record "
                   "around them is used" % (rec.skipped, rec.stretches, "" if rec.stretches == 1 else "es"))
    if rec.trailer is None:
        out.append("no trailer: the recording did not finish (QEMU stopped, Ctrl-A X, or the file was cut); "
                   "its complete records are used")
    else:
        saved = rec.trailer[3]
        held = rec.trailer_at - rec.records_at
        if held < saved:
            out.append("the guest saved %d bytes of records, the file holds %d: the host lost %d "
                       "(its disk full?)" % (saved, held, saved - held))
    return out


def load(path, syms, title=None, progress=True, which=None, samples=True):
    """(Profile, Recording, problem lines) from the recording at PATH: the
    last one it holds, or the one numbered WHICH (0 the first). Without
    SAMPLES the profile has its stacks and tables but not its samples one by
    one (p.samples empty): memory then grows with the distinct chains, not
    with the samples (folded stacks, diff, annotate need no more). SAMPLES
    "stream": p.samples is a StreamedSamples, on disk (perf.data's writer
    reads it back in time order)."""
    with open(path, "rb") as f:
        # Mapped, not read: the reader lets go of the pages behind it (_Reader.progress).
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
    with profdata.no_gc():
        p, rec = _Reader(data, syms, title or path.rsplit("/", 1)[-1], which, samples).run(progress)
    return p, rec, problems(data, rec)


def command(data):
    """What the trailer at the end of DATA says was recorded, or "" when the recording did not finish."""
    at = len(data) - TRAILER_SIZE
    if at < 0 or _plausible(data, at, len(data)) != TRAILER_SIZE or data[at:at + 2] != b"\0\1":
        return ""
    return bytes(data[len(data) - 136:len(data) - 8]).split(b"\0")[0].decode("utf-8", "replace")
