"""Unit tests of the files other tools read: perf.data (perfdata.py), the
speedscope document and the Chrome trace events (speedscope.py)."""
import os
import struct
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "profview"))
import perfdata  # noqa: E402
import perfheader  # noqa: E402
import profdata  # noqa: E402
import speedscope  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CALLTREE_LOG = os.path.join(FIXTURES, "calltree-export.log")

BLOCK = ["cpu GenuineIntel,6,85,4 Test CPU",
         "clock 2000000000 2",
         "image 0 kernel ffffffff80100000 ffffffff80200000 0 500",
         "image 5 calltree 400000 402000",
         "lost 0 4 2000",
         "sample 0 5 5 1000 u u:400108,u:4001e9",
         "sample 1 5 5 3000 k k:ffffffff80100010,u:4001e9",
         "sample 0 5 5 9000 u u:400108,u:4001e9",
         "cswitch 0 1000 0 5 256:10,260:1",
         "cswitch 0 5000 5 0 256:4010,260:3",
         "cswitch 0 9000 0 5 256:8010,260:3"]


def records(data):
    """[(type, misc, body)] of a perf.data file's data section."""
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    out, off = [], data_off
    while off < data_off + data_size:
        rtype, misc, size = struct.unpack_from("<IHH", data, off)
        out.append((rtype, misc, data[off + 8:off + size]))
        off += size
    return out


def features(data):
    """{feature bit: section bytes}."""
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    bitmap = int.from_bytes(data[72:104], "little")
    bits = [b for b in range(256) if bitmap >> b & 1]
    out = {}
    for i, b in enumerate(bits):
        off, size = struct.unpack_from("<QQ", data, data_off + data_size + 16 * i)
        out[b] = data[off:off + size]
    return out


def trailer(body):
    """A non-sample record's sample_id: (pid, tid, time, cpu, id)."""
    pid, tid, t, cpu, _, ident = struct.unpack_from("<IIQIIQ", body, len(body) - 32)
    return pid, tid, t, cpu, ident


class PerfData(unittest.TestCase):
    def setUp(self):
        self.syms = profdata.SymbolDirs([FIXTURES], "/nonexistent")
        self.p = profdata.from_export(BLOCK, self.syms)
        self.data = perfdata.perf_data(self.p, self.syms, 1000, {"kernel": ("/k/kernel.elf", bytes(range(20)))},
                                       ["profile", "record", "-g", "calltree"])

    def test_header_attr_and_ids(self):
        data = self.data
        self.assertEqual(data[:8], b"PERFILE2")
        self.assertEqual(struct.unpack_from("<QQ", data, 8), (104, 144))
        attrs_off, = struct.unpack_from("<Q", data, 24)
        attr_type, attr_size, _, period, sample_type, _, flags = struct.unpack_from("<IIQQQQQ", data, attrs_off)
        self.assertEqual((attr_type, attr_size, period), (1, 128, 1000))
        self.assertTrue(sample_type & perfdata.SAMPLE_IDENTIFIER)
        self.assertTrue(flags & perfdata.ATTR_SAMPLE_ID_ALL and flags & perfdata.ATTR_CONTEXT_SWITCH)
        ids_off, ids_size = struct.unpack_from("<QQ", data, attrs_off + 128)
        self.assertEqual(struct.unpack_from("<2Q", data, ids_off), (1, 2))  # one per CPU (clock line: 2)

    def test_samples(self):
        samples = [r for r in records(self.data) if r[0] == perfdata.RECORD_SAMPLE]
        self.assertEqual(len(samples), 3)
        # The kernel sample: identifier (CPU 1's id), ip, pid/tid, time in
        # ns (TSC 3000 at 2 GHz), cpu, period, then KERNEL context, the
        # kernel frame, USER context, the user's.
        misc, body = samples[1][1], samples[1][2]
        self.assertEqual(misc, perfdata.MISC_KERNEL)
        ident, ip, pid, tid, t, cpu, _, period, nr = struct.unpack_from("<QQIIQIIQQ", body)
        self.assertEqual((ident, ip, pid, tid, t, cpu, period, nr), (2, 0xffffffff80100010, 5, 5, 1500, 1, 1000, 4))
        chain = struct.unpack_from("<4Q", body, 56)
        self.assertEqual(chain, (perfdata.CONTEXT_KERNEL, 0xffffffff80100010, perfdata.CONTEXT_USER, 0x4001e9))

    def test_tasks_in_time_order(self):
        recs = [r for r in records(self.data) if r[0] != perfdata.RECORD_SAMPLE]
        kinds = [r[0] for r in recs]
        fork, comm = kinds.index(perfdata.RECORD_FORK), kinds.index(perfdata.RECORD_COMM)
        self.assertLess(fork, comm)
        self.assertEqual(struct.unpack_from("<4I", recs[fork][2]), (5, 0, 5, 0))
        self.assertEqual(recs[comm][2][8:16].rstrip(b"\0"), b"calltree")
        self.assertEqual(recs[comm][1], perfdata.MISC_COMM_EXEC)
        exit_ = recs[kinds.index(perfdata.RECORD_EXIT)]
        self.assertEqual(trailer(exit_[2])[2], 4501)  # just after the last sample (TSC 9000)
        kernel = recs[kinds.index(perfdata.RECORD_MMAP2)]
        self.assertEqual(kernel[1], perfdata.MISC_KERNEL | perfdata.MISC_MMAP_BUILD_ID)
        self.assertIn(b"[kernel.kallsyms]_text\0", kernel[2])
        times = [trailer(r[2])[2] for r in recs if r[0] != perfdata.RECORD_MMAP2]
        self.assertEqual(times, sorted(times))

    def test_switches_and_lost(self):
        recs = records(self.data)
        switches = [r for r in recs if r[0] == perfdata.RECORD_SWITCH_CPU_WIDE]
        self.assertEqual(len(switches), 6)  # out and in at each of 3 switches
        out, into = switches[0], switches[1]
        self.assertEqual((out[1], struct.unpack_from("<I", out[2])[0], trailer(out[2])[0]),
                         (perfdata.MISC_SWITCH_OUT, 5, 0))
        self.assertEqual((into[1], struct.unpack_from("<I", into[2])[0], trailer(into[2])[0]), (0, 0, 5))
        lost = [r for r in recs if r[0] == perfdata.RECORD_LOST]
        self.assertEqual(struct.unpack_from("<QQ", lost[0][2]), (1, 4))
        self.assertEqual(trailer(lost[0][2])[:4], (5, 5, 1000, 0))

    def test_features(self):
        f = features(self.data)
        for bit in (perfheader.HOSTNAME, perfheader.OSRELEASE, perfheader.ARCH, perfheader.NRCPUS,
                    perfheader.CPUDESC, perfheader.CMDLINE, perfheader.EVENT_DESC, perfheader.BUILD_ID):
            self.assertIn(bit, f)
        self.assertEqual(struct.unpack_from("<II", f[perfheader.NRCPUS]), (2, 2))
        self.assertIn(b"Test CPU\0", f[perfheader.CPUDESC])
        nr, attr_size = struct.unpack_from("<II", f[perfheader.EVENT_DESC])
        self.assertEqual((nr, attr_size), (1, 128))
        self.assertIn(b"cpu-clock\0", f[perfheader.EVENT_DESC])
        self.assertEqual(struct.unpack_from("<I", f[perfheader.CMDLINE])[0], 4)
        build_id = f[perfheader.BUILD_ID]
        self.assertEqual(struct.unpack_from("<i", build_id, 8)[0], -1)
        self.assertEqual(build_id[12:32], bytes(range(20)))
        self.assertIn(b"[kernel.kallsyms]\0", build_id)


class PerfDataSources(unittest.TestCase):
    """A recording of two sources: an attribute each, named as perf names them."""

    def test_an_attribute_per_source(self):
        block = ["clock 1000000000 2", "source 0 1221", "image 5 calltree 400000 402000",
                 "sample 0 5 5 1000 u u:400108 0", "sample 1 5 5 2000 u u:400108 19",
                 "sample 1 5 5 3000 u u:400108,trunc 0"]
        syms = profdata.SymbolDirs([FIXTURES], "/nonexistent")
        data = perfdata.perf_data(profdata.from_export(block, syms), syms, 7)
        attr_size, = struct.unpack_from("<Q", data, 16)
        attrs_off, attrs_size = struct.unpack_from("<QQ", data, 24)
        attrs = []
        for off in range(attrs_off, attrs_off + attrs_size, attr_size):
            ptype, _, config, period = struct.unpack_from("<IIQQ", data, off)
            ids_off, ids_size = struct.unpack_from("<QQ", data, off + 128)
            attrs.append((ptype, config, period, struct.unpack_from("<%dQ" % (ids_size // 8), data, ids_off)))
        # ProfileTime: cpu-clock every 1221 * 100 ns; ProfileTotalCycles (19):
        # cycles, no interval in the export: the default period.
        self.assertEqual(attrs, [(1, 0, 122100, (1, 2)), (0, 0, 7, (3, 4))])
        desc = features(data)[perfheader.EVENT_DESC]
        self.assertLess(desc.index(b"cpu-clock\0"), desc.index(b"cycles\0"))
        samples = [r for r in records(data) if r[0] == perfdata.RECORD_SAMPLE]
        self.assertEqual([struct.unpack_from("<Q", r[2])[0] for r in samples], [1, 4, 2])


class Speedscope(unittest.TestCase):
    def test_profiles_in_nanoseconds(self):
        p = profdata.from_export(BLOCK, profdata.SymbolDirs([FIXTURES], "/nonexistent"))
        doc = speedscope.speedscope(p, "t")
        names = [q["name"] for q in doc["profiles"]]
        self.assertEqual(names, ["calltree (pid 5)", "cpu 0", "cpu 1"])
        for q in doc["profiles"]:
            self.assertEqual(q["unit"], "nanoseconds")
            self.assertEqual(len(q["samples"]), len(q["weights"]))
            self.assertEqual(sum(q["weights"]), q["endValue"] - q["startValue"])
        # cpu 0: samples at 0 and 4000 ns, 4000 ns apart: the interval is
        # 4000, so no gap between them.
        cpu0 = doc["profiles"][1]
        self.assertEqual((cpu0["startValue"], cpu0["endValue"]), (0, 8000))
        frames = [f["name"] for f in doc["shared"]["frames"]]
        self.assertEqual(len([s for s in doc["profiles"][0]["samples"] if s]), 3)
        self.assertIn("[unknown]_[k]", frames)

    def test_fixture_samples_all_in_both_views(self):
        p, _ = profdata.load(CALLTREE_LOG, profdata.SymbolDirs([FIXTURES], "/nonexistent"))
        doc = speedscope.speedscope(p, "calltree")
        by_pid = [q for q in doc["profiles"] if "pid" in q["name"]]
        self.assertEqual(sum(1 for q in by_pid for s in q["samples"] if s), 200)
        leaf = doc["shared"]["frames"][doc["profiles"][0]["samples"][0][-1]]["name"]
        self.assertIn(leaf, ("ct_leaf", "ct_left", "ct_right", "main"))

    def test_chrome_trace(self):
        p = profdata.from_export(BLOCK, profdata.SymbolDirs([FIXTURES], "/nonexistent"))
        events = speedscope.chrome_trace(p)["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        self.assertEqual([(e["name"], e["ts"], e["dur"]) for e in slices],
                         [("calltree (pid 5)", 0.0, 2.0), ("idle (pid 0)", 2.0, 2.0)])
        self.assertEqual(slices[0]["args"]["task-clock"], 4000)
        counters = [e for e in events if e["ph"] == "C"]
        self.assertEqual(counters[-1]["args"], {"task-clock": 8010, "system-calls": 3})
        self.assertIn({"name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "cpu 0"}}, events)


OFFCPU_LOG = os.path.join(FIXTURES, "offcpu-export.log")
# Off-CPU records (profile record --off-cpu): one sleep of 3 us, one
# preemption of 1 us, between samples.
OFF_BLOCK = ["clock 1000000000 1", "source 0 1221", "image 0 kernel ffffffff80100000 ffffffff80200000 0 0",
             "image 5 offcpu 400000 402000",
             "sample 0 5 5 1000 u u:400108,u:4001e9 0",
             "offcpu 0 5 5 2000 3000 1 k:ffffffff80100010,u:400120,u:4001e9",
             "sample 0 5 5 6000 u u:400108,u:4001e9 0",
             "offcpu 0 5 5 7000 1000 0 k:ffffffff80100020,u:400108,u:4001e9"]


class OffCpu(unittest.TestCase):
    """Off-CPU records in the export: stacks by time away, perf's
    offcpu-time event, speedscope's off-CPU profile."""

    def setUp(self):
        self.syms = profdata.SymbolDirs([FIXTURES], "/nonexistent")
        self.p = profdata.from_export(OFF_BLOCK, self.syms)

    def test_stacks_weighted_by_time_away(self):
        self.assertEqual(len(self.p.offcpu), 2)
        self.assertEqual(sorted((s[-1], n) for s, n in self.p.off_stacks.items()),
                         [("[runnable]", 1), ("[sleep]", 3)])
        self.assertEqual(self.p.total, 2)  # the on-CPU picture is unchanged

    def test_perf_offcpu_time_event(self):
        data = perfdata.perf_data(self.p, self.syms, 1)
        attrs_off, attrs_size = struct.unpack_from("<QQ", data, 24)
        attrs = [struct.unpack_from("<IIQ", data, off)[::2] for off in range(attrs_off, attrs_off + attrs_size, 144)]
        self.assertEqual(attrs, [(1, 0), (1, perfdata.PERF_COUNT_SW_BPF_OUTPUT)])
        self.assertIn(b"offcpu-time\0", features(data)[perfheader.EVENT_DESC])
        samples = [r[2] for r in records(data) if r[0] == perfdata.RECORD_SAMPLE]
        # identifier, ip, pid/tid, time, cpu/res, period: the off-CPU ones' period is the time away
        periods = [struct.unpack_from("<QQIIQIIQ", b)[7] for b in samples]
        self.assertEqual(periods, [122100, 3000, 122100, 1000])

    def test_speedscope_off_cpu_profile(self):
        doc = speedscope.speedscope(self.p, "t")
        off = [q for q in doc["profiles"] if q["name"].startswith("off-CPU")]
        self.assertEqual(len(off), 1)
        self.assertEqual([w for s, w in zip(off[0]["samples"], off[0]["weights"]) if s], [3000, 1000])
        leaves = [doc["shared"]["frames"][s[-1]]["name"] for s in off[0]["samples"] if s]
        self.assertEqual(leaves, ["[sleep]", "[runnable]"])

    def test_fixture_offcpu_split(self):
        # offcpu 1000 under icount: 40% computing, then 30% asleep, 30% waiting for its child.
        p, _ = profdata.load(OFFCPU_LOG, self.syms)
        away = {}
        for o in p.offcpu:
            if o.pid == 3:
                away[profdata.reason_name(o.reason)] = away.get(profdata.reason_name(o.reason), 0) + o.off_ns
        self.assertAlmostEqual(away["sleep"] / 1e6, 300, delta=6)
        self.assertAlmostEqual(away["child"] / 1e6, 300, delta=6)


if __name__ == "__main__":
    unittest.main()
