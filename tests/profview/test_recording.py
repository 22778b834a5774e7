"""Unit tests of scripts/profview/recording.py: recordings made here, record by
record, as `profile record --host` writes them (userland/include/samplelog.h,
kernel/lib/abi/pmclog.h), whole, cut short, damaged and doubled.

Run from the repository root:
    python3 -m unittest discover -s tests/profview -v
"""
import contextlib
import io
import os
import struct
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "profview"))
import perfdata  # noqa: E402
import profdata  # noqa: E402
import profview  # noqa: E402
import recording  # noqa: E402
import speedscope  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
LEAF, LEFT, RIGHT, MAIN = 0x400104, 0x400150, 0x400190, 0x4001D0  # calltree.nm


def header(cpu=0, version=recording.VERSION):
    body = recording.MAGIC + struct.pack("<II", version, 1) + b"GenuineIntel,6,85,4 Test CPU".ljust(96, b"\0")
    return struct.pack("<HHIQ", recording.RECORDING, cpu, 16 + len(body), 0) + body


def initialize(ncpus=2, hz=10 ** 9):
    return struct.pack("<HHIQIIQ", recording.INITIALIZE, 0, 32, 1, 1, ncpus, hz)


def image(pid, name, base=0x400000, end=0x400300):
    return struct.pack("<HHIQIIQQ32s", recording.MAP, 0, 72, 5, pid, 1, base, end, name.encode())


def sample(frames, cpu=0, pid=3, tsc=100, user=True, trunc=False):
    size = 40 + 8 * len(frames)
    flags = (recording.SAMPLE_USER if user else 0) | (recording.SAMPLE_TRUNC if trunc else 0)
    return struct.pack("<HHIQIIIHHHHI", recording.SAMPLE, cpu, size, tsc, pid, pid, 1, 0,
                       flags, len(frames), 0, 0) + struct.pack(
        "<%dQ" % len(frames), *frames)


def lost(cpu, count):
    return struct.pack("<HHIQQ", recording.LOST, cpu, 24, 900, count)


def trailer(saved, logged, command=b"calltree"):
    stats = struct.pack("<IIIIQQQQQ", 2, 1, 262144, 128, 0, 0, 0, 0, 0)
    rows = struct.pack("<QQQQ", logged, logged, 0, 0) + bytes(32 * 63)
    body = struct.pack("<IIIIQ", 0, 4, 1, 0, 1221) + stats + rows + command.ljust(128, b"\0") + struct.pack("<Q", saved)
    rec = struct.pack("<HHIQ", recording.TRAILER, 0, 16 + len(body), 0) + body
    assert len(rec) == recording.TRAILER_SIZE
    return rec


# A recording of calltree: 4 in ct_leaf under ct_left, 2 in ct_right, 1 in
# main; one sample on CPU 1 comes before the map record (the rings are drained
# CPU by CPU).
BODY = [initialize(), sample([LEAF, LEFT, MAIN], cpu=1), image(3, "calltree")] + \
    [sample([LEAF, LEFT, MAIN], tsc=200 + i) for i in range(3)] + \
    [sample([RIGHT, MAIN]), sample([RIGHT, MAIN]), sample([MAIN]), lost(1, 7)]
WANT = {"main;ct_left;ct_leaf 4", "main;ct_right 2", "main 1"}


def whole(body=BODY):
    records = b"".join(body)
    return header() + records + trailer(len(records), 7)


def syms():
    return profdata.SymbolDirs([FIXTURES], kernel=None)


class RecordingTest(unittest.TestCase):
    def load(self, data):
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
            f.write(data)
        self.addCleanup(os.unlink, f.name)
        p, rec, problems = recording.load(f.name, syms(), progress=False)
        return p, rec, problems

    def test_whole_recording(self):
        p, rec, problems = self.load(whole())
        self.assertEqual(problems, [])
        self.assertEqual(set(p.folded_lines()), WANT)
        self.assertEqual(len(p.samples), 7)
        self.assertEqual(p.lost[1], 7)
        self.assertEqual((p.cpu_id, p.cpu_desc, p.ncpus, p.tsc_hz), ("GenuineIntel,6,85,4", "Test CPU", 2, 10 ** 9))
        self.assertEqual(rec.trailer[2], "calltree")
        self.assertEqual(rec.skipped, 0)

    def test_a_cut_chain_has_no_root_of_its_own(self):
        # As the guest's folded stacks: a chain the walk cut (a bad frame, a
        # full buffer) begins where it was cut, under no "[truncated]" root.
        p, _, problems = self.load(whole(BODY + [sample([LEAF, LEFT], tsc=300, trunc=True)]))
        self.assertEqual(problems, [])
        self.assertIn("ct_left;ct_leaf 1", p.folded_lines())

    def test_sample_before_its_image_is_named(self):
        p, _, _ = self.load(whole())
        first = p.samples[0]
        self.assertEqual((first.cpu, [f[3] for f in first.frames]), (1, ["ct_leaf", "ct_left", "main"]))

    def test_every_cut_keeps_the_complete_records(self):
        data = whole()
        ends, pos = [], len(header())
        for r in BODY:
            pos += len(r)
            ends.append(pos)
        for cut in range(len(header()) + 1, len(data)):
            p, rec, problems = self.load(data[:cut])
            complete = sum(1 for e in ends if e <= cut)
            samples = sum(1 for r, e in zip(BODY, ends) if e <= cut and r[:2] == b"\1\0")
            self.assertEqual(len(p.samples), samples, "cut at %d" % cut)
            self.assertEqual(rec.records, 1 + complete, "cut at %d" % cut)
            held = max([e for e in ends if e <= cut] + [len(header())])
            self.assertEqual(rec.skipped, cut - held, "cut at %d" % cut)
            self.assertTrue(any("no trailer" in w for w in problems), problems)

    def test_damage_in_the_middle_is_skipped_and_counted(self):
        body = list(BODY)
        body[4] = b"\xee" * len(body[4])  # the third ct_leaf sample overwritten
        p, rec, problems = self.load(whole(body))
        self.assertEqual(len(p.samples), 6)
        self.assertEqual(rec.skipped, len(BODY[4]))
        self.assertEqual(rec.stretches, 1)
        self.assertIn("main;ct_left;ct_leaf 3", p.folded_lines())
        self.assertTrue(any("skipped %d bytes" % len(BODY[4]) in w for w in problems), problems)
        self.assertIsNotNone(rec.trailer)

    def test_a_bad_frame_count_is_damage(self):
        bad = bytearray(sample([LEAF, LEFT, MAIN]))
        bad[32:34] = struct.pack("<H", 9)  # nframes beyond the record's size
        body = BODY[:3] + [bytes(bad)] + BODY[3:]
        p, rec, _ = self.load(whole(body))
        self.assertEqual((len(p.samples), rec.skipped), (7, len(bad)))

    def test_host_lost_bytes_are_reported(self):
        records = b"".join(BODY)
        data = header() + records + trailer(len(records) + 4096, 7)
        _, _, problems = self.load(data)
        self.assertTrue(any("the host lost 4096" in w for w in problems), problems)

    def test_the_last_of_two_recordings_is_used(self):
        first = whole([initialize(), image(3, "calltree"), sample([MAIN])])
        p, rec, problems = self.load(first + whole())
        self.assertEqual(set(p.folded_lines()), WANT)
        self.assertEqual(rec.recordings, 2)
        self.assertTrue(any("2 recordings" in w for w in problems), problems)

    def test_another_version_is_said(self):
        records = b"".join(BODY)
        _, _, problems = self.load(header(version=9) + records + trailer(len(records), 7))
        self.assertTrue(any("version 9" in w for w in problems), problems)

    def test_a_file_without_a_header(self):
        _, _, problems = self.load(b"".join(BODY))
        self.assertTrue(any("no recording header" in w for w in problems), problems)

    def test_profview_converts_a_cut_recording_and_says_what_it_skipped(self):
        data = whole()[:-100]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "recording.bin")
            with open(path, "wb") as f:
                f.write(data)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = profview.main(["--elf-dir", FIXTURES, "--kernel", "", "perfdata", path, "--out", d])
            self.assertEqual(rc, 0)
            self.assertTrue(os.path.getsize(os.path.join(d, "perf.data")) > 0)
            self.assertIn("skipped %d bytes" % (recording.TRAILER_SIZE - 100), err.getvalue())
            self.assertIn("no trailer", err.getvalue())


def drained(ncpus=3, turns=4, per_turn=5):
    """Samples as the rings are drained: CPU by CPU, each CPU's turn in
    time order, time going back at the next CPU's; some at one TSC on two
    CPUs, and lost records with and without a time."""
    out = [initialize(ncpus, 3 * 10 ** 9), image(3, "calltree"), image(4, "calltree")]
    chains = [[LEAF, LEFT, MAIN], [RIGHT, MAIN], [MAIN]]
    for turn in range(turns):
        for cpu in range(ncpus):
            for i in range(per_turn):
                tsc = 1000 + 100 * (turn * per_turn + i) + (cpu == 2)  # CPUs 0 and 1 at one TSC
                out.append(sample(chains[(i + cpu) % 3], cpu=cpu, pid=3 + i % 2, tsc=tsc, user=i % 4 != 0))
        out.append(lost(turn % ncpus, 2))
    out.append(struct.pack("<HHIQQ", recording.LOST, 1, 24, 0, 5))  # no time: the CPU's last sample's
    return out


class StreamedTest(unittest.TestCase):
    """perf.data of a recording whose samples stay on disk (samples="stream")
    is byte for byte the one made from them in memory."""

    def both(self, data):
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(data)
            f.flush()
            out = []
            for kept in (True, "stream"):
                p, _, _ = recording.load(f.name, syms(), progress=False, samples=kept)
                out.append(perfdata.perf_data(p, syms(), lambda: speedscope.sample_interval(p), {},
                                              ("profile", "record")))
                if kept == "stream":
                    self.assertIsInstance(p.samples, recording.StreamedSamples)
            return out

    def test_whole_recording(self):
        memory, disk = self.both(whole())
        self.assertEqual(memory, disk)

    def test_samples_drained_cpu_by_cpu(self):
        memory, disk = self.both(whole(drained()))
        self.assertEqual(memory, disk)

    def test_no_trailer_and_two_recordings(self):
        first = whole([initialize(), image(3, "calltree"), sample([MAIN])])
        memory, disk = self.both(first + header() + b"".join(drained()))  # the period from the samples
        self.assertEqual(memory, disk)

    def test_speedscope(self):
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(whole(drained()))
            f.flush()
            docs = [speedscope.speedscope(recording.load(f.name, syms(), progress=False, samples=kept)[0], "t")
                    for kept in (True, "stream")]
        self.assertEqual(docs[0], docs[1])

    def test_samples_read_back(self):
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(whole(drained()))
            f.flush()
            listed = recording.load(f.name, syms(), progress=False)[0].samples
            streamed = recording.load(f.name, syms(), progress=False, samples="stream")[0].samples
        self.assertEqual(len(streamed), len(listed))
        self.assertEqual(list(streamed), listed)
        self.assertEqual(streamed[3:7], listed[3:7])


if __name__ == "__main__":
    unittest.main()
