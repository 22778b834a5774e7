"""Unit tests of scripts/profview against the built programs and the fixtures.

Run from the repository root after `make all`:
    python3 -m unittest discover -s tests/profview -v
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "profview"))
import profdata  # noqa: E402
import profview  # noqa: E402

CALIB = os.path.join(ROOT, "build", "userland", "calib")
KERNEL = os.path.join(ROOT, "build", "kernel.elf")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CALLTREE_LOG = os.path.join(FIXTURES, "calltree-export.log")
# The calltree program's split under icount (the guest's contract).
CALLTREE_SPLIT = {"main;ct_left;ct_leaf": 40, "main;ct_right;ct_leaf": 20, "main;ct_left": 20,
                  "main;ct_right": 10, "main": 10}


def nm_text_symbols(path):
    """The text symbols nm prints (t/T) that the guest's symbolizer keeps
    (readelf's types: FUNC, or NOTYPE without a dot), one per address: a
    sized one first."""
    out = subprocess.run(["nm", "-n", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    text = {(int(a, 16), n) for a, t, n in (l.split() for l in out.splitlines() if len(l.split()) == 3)
            if t in "tT"}
    out = subprocess.run(["readelf", "-sW", path], check=True, capture_output=True, text=True).stdout
    best = {}
    for f in (l.split() for l in out.splitlines()):
        if len(f) != 8 or not f[0][:-1].isdigit() or (int(f[1], 16), f[7]) not in text:
            continue
        if f[3] == "FUNC" or (f[3] == "NOTYPE" and "." not in f[7]):
            rank = (int(f[2], 0) == 0, f[7])
            a = int(f[1], 16)
            best[a] = min(best.get(a, rank), rank)
    return sorted((a, n) for a, (_, n) in best.items())


def addr(path, name):
    return dict((n, a) for a, n in nm_text_symbols(path))[name]


def gmon_bytes(low, high, bins):
    rec = struct.pack("<BQQII15sc", 0, low, high, len(bins), 8190, b"seconds", b"s")
    return b"gmon" + struct.pack("<I", 1) + bytes(12) + rec + struct.pack("<%dH" % len(bins), *bins)


class Symbols(unittest.TestCase):
    def test_elf_symbols_match_nm(self):
        for path in (CALIB, KERNEL):
            self.assertEqual(profdata.elf_functions(path), nm_text_symbols(path), path)

    def test_lookup_is_the_function_at_or_before(self):
        s = profdata.Symbols(profdata.elf_functions(CALIB))
        a = addr(CALIB, "calib_a")
        self.assertEqual(s.lookup(a), ("calib_a", a))
        self.assertEqual(s.lookup(a + 0x18)[0], "calib_a")
        self.assertEqual(s.lookup(addr(CALIB, "calib_b"))[0], "calib_b")
        self.assertEqual(s.lookup(0x1000), (None, None))


class Export(unittest.TestCase):
    def setUp(self):
        self.syms = profdata.SymbolDirs([FIXTURES], KERNEL)

    def test_fixture_folds_to_the_calltree_split(self):
        p, what = profdata.load(CALLTREE_LOG, self.syms)
        self.assertEqual(what, "export block")
        self.assertEqual(p.total, 200)
        shares = {";".join(s): 100.0 * n / p.total for s, n in p.stacks.items()}
        self.assertEqual(shares, CALLTREE_SPLIT)
        # The host's symbolization agrees with the guest's folded lines.
        self.assertEqual(p.guest_folded, {k: v * 2 for k, v in CALLTREE_SPLIT.items()})
        self.assertFalse([w for w in p.warnings if "differ" in w])
        self.assertEqual(sum(p.by_cpu[0].values()) + sum(p.by_cpu[1].values()), 200)
        self.assertEqual(sum(p.by_pid[7].values()), 200)

    def test_kernel_frames_truncation_lost_and_unknown(self):
        k = addr(KERNEL, "syscall_dispatch")
        block = ["image 0 kernel ffffffff80100000 ffffffff80200000", "image 9 calib 400000 402000",
                 "sample 1 9 9 100 k k:%x,k:%x,u:%x" % (k + 5, addr(KERNEL, "syscall_entry") + 9,
                                                       addr(CALIB, "main") + 4),
                 "sample 0 9 9 200 u u:%x,trunc" % (addr(CALIB, "calib_b") + 8),
                 "sample 0 9 9 300 u u:7fff0000", "lost 0 3", "lost 1 2", "lost 0 1"]
        p = profdata.from_export(block, profdata.SymbolDirs([os.path.dirname(CALIB)], KERNEL))
        self.assertEqual(p.folded_lines(), ["[unknown] 1", "calib_b 1",
                                            "main;syscall_entry_[k];syscall_dispatch_[k] 1"])
        self.assertEqual(dict(p.lost), {0: 4, 1: 2})
        self.assertEqual(p.mode_by_cpu[1]["k"], 1)
        self.assertEqual(p.function_hits()["syscall_dispatch_[k]"], 1)
        # The guest printed no folded lines here: nothing to compare, no warning.
        self.assertEqual(p.warnings, [])

    def test_return_addresses_named_as_the_guest_names_them(self):
        # A return address is named by the byte before it (the call): one
        # that is the next function's first byte names the caller, as the
        # guest's report does, so the guest's folded lines agree.
        b = addr(CALIB, "calib_b")
        caller = profdata.Symbols(profdata.elf_functions(CALIB)).lookup(b - 1)[0]
        block = ["image 9 calib 400000 402000",
                 "sample 0 9 9 100 u u:%x,u:%x" % (addr(CALIB, "calib_a") + 4, b),
                 "sample 0 9 9 200 u u:%x,u:%x,trunc" % (addr(CALIB, "calib_c") + 4, addr(CALIB, "main") + 9),
                 "folded %s;calib_a 1" % caller, "folded main;calib_c 1"]
        p = profdata.from_export(block, profdata.SymbolDirs([os.path.dirname(CALIB)], KERNEL))
        self.assertNotEqual(caller, "calib_b")
        self.assertEqual(p.folded_lines(), sorted(["%s;calib_a 1" % caller, "main;calib_c 1"]))
        self.assertEqual(p.warnings, [])

    def test_local_labels_belong_to_their_function(self):
        # NASM's local labels (uaccess_copy.done) name no function of their
        # own in the guest: nor on the host.
        k = profdata.Symbols(profdata.elf_functions(KERNEL))
        self.assertFalse([n for n in k.names if "." in n and n.startswith("uaccess_copy")])
        self.assertEqual(k.lookup(k.end_of("uaccess_copy") - 1)[0], "uaccess_copy")

    def test_disagreeing_guest_folded_is_reported(self):
        lines = profdata.console_lines(CALLTREE_LOG)
        lines = [l.replace("folded main 20", "folded main 21") for l in lines]
        p = profdata.from_export(profdata.export_blocks(lines)[0], self.syms)
        self.assertTrue(any("differ" in w for w in p.warnings))
        # The guest's lines define the stacks; the samples still give the tables.
        self.assertEqual((p.stacks[("main",)], p.total), (21, 201))
        self.assertEqual(sum(p.by_pid[7].values()), 200)

    def test_folded_file_round_trip(self):
        p, _ = profdata.load(CALLTREE_LOG, self.syms)
        with tempfile.NamedTemporaryFile("w", suffix=".folded", delete=False) as f:
            f.write("\n".join(p.folded_lines()) + "\n")
        q, what = profdata.load(f.name, self.syms)
        os.unlink(f.name)
        self.assertEqual(what, "folded stacks")
        self.assertEqual(q.stacks, p.stacks)
        self.assertEqual(q.function_hits(), p.function_hits())

    def test_tree_values_are_inclusive(self):
        p, _ = profdata.load(CALLTREE_LOG, self.syms)
        t = p.tree()
        self.assertEqual((t["name"], t["value"]), ("all", 200))
        main = t["children"][0]
        kids = {c["name"]: c["value"] for c in main["children"]}
        self.assertEqual((main["name"], main["value"], kids), ("main", 200, {"ct_left": 120, "ct_right": 60}))


class Gmon(unittest.TestCase):
    def test_buckets_go_to_the_function_of_their_first_byte(self):
        base = addr(CALIB, "_start")
        a, b = addr(CALIB, "calib_a"), addr(CALIB, "calib_b")
        bins = [0] * ((b + 0x100 - base) // 4)
        bins[(a + 8 - base) // 4] = 70000 - 65535  # split over two records below
        bins[(b - base) // 4] = 30
        data = gmon_bytes(base, base + 4 * len(bins), bins)
        extra = list(bins)
        extra[(a + 8 - base) // 4] = 65535
        extra[(b - base) // 4] = 0
        data += gmon_bytes(base, base + 4 * len(bins), extra)[20:]
        p = profdata.from_gmon(data, CALIB)
        self.assertEqual((p.kind, p.bucket, p.total), ("flat", 4, 70030))
        self.assertEqual(p.function_hits(), {"calib_a": 70000, "calib_b": 30})
        self.assertEqual(p.addr_hits[("calib", a + 8)], 70000)


class Annotate(unittest.TestCase):
    def test_flat_buckets_and_exact_addresses(self):
        insns = profdata.disassemble(CALIB, "calib_a")
        starts = [a for a, _, _ in insns]
        self.assertGreaterEqual(len(insns), 5)
        # Exact addresses: every sample on its own instruction.
        p = profdata.Profile("t")
        for i, a in enumerate(starts):
            p.add(["calib_a"], i + 1, leaf_key=("calib", "calib_a"), addr_key=("calib", a))
        rows = profview.annotate_rows(p, "calib", CALIB, "calib_a")
        self.assertEqual([r[3] for r in rows], [i + 1 for i in range(len(starts))])
        self.assertFalse(any(r[4] for r in rows))
        # 4-byte buckets: a bucket's hits go to the first instruction starting
        # in it, marked when another also starts there.
        q = profdata.Profile("t")
        q.bucket = 4
        base = addr(CALIB, "_start")
        buckets = sorted({base + (a - base) // 4 * 4 for a in starts})
        for bkt in buckets:
            q.add(["calib_a"], 10, leaf_key=("calib", "calib_a"), addr_key=("calib", bkt))
        rows = profview.annotate_rows(q, "calib", CALIB, "calib_a")
        self.assertEqual(sum(r[3] for r in rows), 10 * len(buckets))
        for a, _, _, n, note in rows:
            same = [s for s in starts if (s - base) // 4 == (a - base) // 4]
            self.assertEqual(n, 10 if same[0] == a else 0, hex(a))
            self.assertEqual(note, "~" if same[0] == a and len(same) > 1 else "", hex(a))


class Diff(unittest.TestCase):
    def test_rows_sorted_by_change(self):
        a = profdata.from_folded(["main;x 50", "main;y 50"])
        b = profdata.from_folded(["main;x 30", "main;y 60", "main;z 10"])
        rows = profview.diff_rows(a, b)
        self.assertEqual([r[0] for r in rows], ["x", "y", "z"])  # ties by name
        self.assertEqual([round(r[5], 2) for r in rows], [-20.0, 10.0, 10.0])
        t = profview.diff_tree(a, b)
        y = [c for c in t["children"][0]["children"] if c["name"] == "y"][0]
        self.assertEqual((y["value"], round(y["pa"], 2), round(y["pb"], 2), round(y["delta"], 2)),
                         (60, 50.0, 60.0, 10.0))


class Pages(unittest.TestCase):
    def test_pages_are_self_contained(self):
        vendor = os.path.join(ROOT, "build", "profview", "node_modules")
        if not os.path.isdir(vendor):
            self.skipTest("renderer not installed (make profview-vendor)")
        import pages
        p, _ = profdata.load(CALLTREE_LOG, profdata.SymbolDirs([FIXTURES], KERNEL))
        for text in (pages.flamegraph_page(p, vendor), pages.report_page(p, vendor)):
            self.assertNotIn("<script src", text)
            self.assertNotIn("<link", text)
            self.assertIn('id="tree"', text)
            self.assertEqual(text.count("</script>"), text.count("<script"))

    def test_off_cpu_flame_graph_and_gaps(self):
        vendor = os.path.join(ROOT, "build", "profview", "node_modules")
        if not os.path.isdir(vendor):
            self.skipTest("renderer not installed (make profview-vendor)")
        import pages
        p, _ = profdata.load(os.path.join(FIXTURES, "offcpu-export.log"), profdata.SymbolDirs([FIXTURES], KERNEL))
        text = pages.report_page(p, vendor)
        self.assertIn('id="offflame" data-source="offtree"', text)
        self.assertIn('id="offtree"', text)
        # The parent's sleep and wait, 30% of the run each, leave gaps in its time line.
        self.assertGreaterEqual(text.count('data-kind="off" data-bucket'), 40)
        self.assertIn('data-reason="sleep"', text)
        self.assertIn('data-reason="child"', text)


if __name__ == "__main__":
    unittest.main()
