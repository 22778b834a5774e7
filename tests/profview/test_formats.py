"""Unit tests of the files other tools read: perf.data (perfdata.py), the
speedscope document and the Chrome trace events (speedscope.py)."""
import os
import struct
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "profview"))
import perfdata  # noqa: E402
import profdata  # noqa: E402
import speedscope  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CALLTREE_LOG = os.path.join(FIXTURES, "calltree-export.log")

BLOCK = ["clock 2000000000 2",
         "image 0 kernel ffffffff80100000 ffffffff80200000",
         "image 5 calltree 400000 402000",
         "sample 0 5 5 1000 u u:400108,u:4001e9",
         "sample 1 5 5 3000 k k:ffffffff80100010,u:4001e9",
         "sample 0 5 5 9000 u u:400108,u:4001e9",
         "cswitch 0 1000 0 5 256:10,260:1",
         "cswitch 0 5000 5 0 256:4010,260:3",
         "cswitch 0 9000 0 5 256:8010,260:3"]


def records(data):
    """[(type, misc, body)] of a perf.data file's data section."""
    self_size, attr_size = struct.unpack_from("<QQ", data, 8)
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    out, off = [], data_off
    while off < data_off + data_size:
        rtype, misc, size = struct.unpack_from("<IHH", data, off)
        out.append((rtype, misc, data[off + 8:off + size]))
        off += size
    return out


class PerfData(unittest.TestCase):
    def setUp(self):
        self.syms = profdata.SymbolDirs([FIXTURES], "/nonexistent")
        self.p = profdata.from_export(BLOCK, self.syms)

    def test_header_attr_and_samples(self):
        data = perfdata.perf_data(self.p, self.syms)
        self.assertEqual(data[:8], b"PERFILE2")
        self.assertEqual(struct.unpack_from("<QQ", data, 8), (104, 144))
        attr_type, attr_size = struct.unpack_from("<II", data, 104)
        self.assertEqual((attr_type, attr_size), (1, 128))
        recs = records(data)
        samples = [r for r in recs if r[0] == perfdata.RECORD_SAMPLE]
        self.assertEqual(len(samples), 3)
        comms = [r for r in recs if r[0] == perfdata.RECORD_COMM]
        self.assertEqual(comms[0][2][8:16].rstrip(b"\0"), b"calltree")
        # The kernel sample: ip, pid/tid, time in ns (TSC at 2 GHz), cpu,
        # period, then KERNEL context, the kernel frame, USER context, the user's.
        misc, body = samples[1][1], samples[1][2]
        self.assertEqual(misc, perfdata.MISC_KERNEL)
        ip, pid, tid, t, cpu, _, period, nr = struct.unpack_from("<QIIQIIQQ", body)
        self.assertEqual((ip, pid, tid, t, cpu, period, nr), (0xffffffff80100010, 5, 5, 1000, 1, 1, 4))
        chain = struct.unpack_from("<4Q", body, 48)
        self.assertEqual(chain, (perfdata.CONTEXT_KERNEL, 0xffffffff80100010, perfdata.CONTEXT_USER, 0x4001e9))

    def test_build_id_feature(self):
        data = perfdata.perf_data(self.p, self.syms, kernel_id=bytes(range(20)))
        features, = struct.unpack_from("<Q", data, 72)
        self.assertEqual(features, 1 << perfdata.HEADER_BUILD_ID)
        data_off, data_size = struct.unpack_from("<QQ", data, 40)
        off, size = struct.unpack_from("<QQ", data, data_off + data_size)
        section = data[off:off + size]
        self.assertEqual(struct.unpack_from("<i", section, 8)[0], -1)
        self.assertEqual(section[12:32], bytes(range(20)))
        self.assertIn(b"[kernel.kallsyms]\0", section)


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


if __name__ == "__main__":
    unittest.main()
