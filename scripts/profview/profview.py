#!/usr/bin/env python3
"""profview: pictures of a profile, made on the host from what the guest exports.

    profview.py export INPUT [--out DIR] [--title T]
        DIR/profile.folded, DIR/flamegraph.html, DIR/profile.html
    profview.py folded INPUT
        the folded stacks on standard output
    profview.py annotate INPUT --func FUNC [--prog PROG]
        objdump -d of FUNC with samples and % beside each instruction
    profview.py diff A B [--html OUT]
        per-function hits and % of two profiles, sorted by |change|;
        --html also writes a differential flame graph
    profview.py perfdata INPUT [--out DIR | -o FILE]
        DIR/perf.data for perf report, perf script, perf annotate and hotspot;
        the images, with build-ids added, in DIR/perf/ (the kernel's goes into
        perf's build-id cache, its symbols to ~/.debug/[kernel.kallsyms]/)
    profview.py speedscope INPUT [--out DIR]
        DIR/profile.speedscope.json (a sampled profile per process and per
        CPU, in ns) and, from a --cswitch recording's export,
        DIR/profile.trace.json (Chrome trace events); the events of
        `profile report --cswitch --json` on the console: DIR/profile.cswitch.json
    profview.py flamegraph --prog "PROG ARGS" [--out DIR]
    profview.py annotate-run --prog "PROG ARGS" --func FUNC [--out DIR]
    profview.py diff-run --prog "PROG ARGS" --a "run -b 2" --b "run -b 8" [--out DIR]
        boot the shell ISO headless under icount, profile PROG there, and do
        the above with what comes back on the console (make flamegraph,
        make annotate, make profile-diff)
    profview.py record-run [--prog "PROG ARGS"] [--seconds N] [--smp N] [--accel ARGS] [--out DIR]
        boot with the host's recording file (a virtio console) and record PROG
        (-g -k), or the whole machine for N seconds, straight into
        DIR/recording.bin (make record); every INPUT below may be that file
    profview.py perf-data-run --prog "PROG ARGS" [--out DIR]
    profview.py speedscope-run --prog "PROG ARGS" [--out DIR]
        the same for make perf-data (profile record -g -k) and make
        speedscope (that, then profile record --cswitch)

INPUT is a recording (`profile record --host`, make record), a console log
holding a `profile report --export` block (the last one is used) or a `profile run -g` gmon frame, a gmon.out file, or a folded
file. Symbols come from build/userland/PROG and build/kernel.elf (--elf-dir,
--kernel). Exit status 0 when done, 1 on an error, 2 for a bad command line,
77 when the guest has no `profile record` yet.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pages  # noqa: E402
import perfdata  # noqa: E402
import profdata  # noqa: E402
import speedscope  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from qemuenv import QEMU as QEMU_BIN, ICOUNT_ARGS, host_recording  # noqa: E402  (scripts/qemu.sh)

SKIP = 77
QEMU = [QEMU_BIN, "-machine", "pc", "-cpu", "max", "-boot", "d", "-no-reboot",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-display", "none", "-monitor", "none",
        "-serial", "stdio", "-smp", "2", "-m", "256M"] + ICOUNT_ARGS


def symbol_dirs(args):
    return profdata.SymbolDirs(args.elf_dir or ["build/userland"], args.kernel)


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s" % path)


def warn(p):
    for w in p.warnings:
        print("profview: warning: %s" % w, file=sys.stderr)


# --- export, folded -------------------------------------------------------------


def do_export(args, src=None):
    p, what = profdata.load(src or args.input, symbol_dirs(args))
    if args.title:
        p.title = args.title
    warn(p)
    if not p.total:
        print("profview: %s: no samples" % (src or args.input), file=sys.stderr)
        return 1
    out = args.out
    write(os.path.join(out, "profile.folded"), "\n".join(p.folded_lines()) + "\n")
    write(os.path.join(out, "flamegraph.html"), pages.flamegraph_page(p, args.vendor))
    write(os.path.join(out, "profile.html"), pages.report_page(p, args.vendor))
    print("profview: %d samples (%s), %d stacks" % (p.total, what, len(p.stacks)))
    return 0


def do_folded(args):
    p, _ = profdata.load(args.input, symbol_dirs(args), samples=False)
    warn(p)
    for line in p.folded_lines():
        print(line)
    return 0


# --- perf.data, speedscope, Chrome trace -----------------------------------------


def is_recording(src):
    with open(src, "rb") as f:
        return profdata.recording_file(f.read(24))


def load_export(args, src, samples=True):
    """The last export block of SRC that has samples (a --cswitch recording's
    export has none), or the recording SRC (`profile record --host`), its
    samples as profdata.load's SAMPLES says."""
    if is_recording(src):
        p, _ = profdata.load(src, symbol_dirs(args), samples=samples)
        warn(p)
        return p
    blocks = profdata.export_blocks(profdata.console_lines(src))
    if not blocks:
        raise ValueError("%s: no export block (perf.data needs the samples one by one)" % src)
    exports = [profdata.from_export(b, symbol_dirs(args), os.path.basename(src)) for b in blocks]
    p = ([e for e in exports if e.samples] or exports)[-1]
    warn(p)
    return p


def record_command(src):
    """The guest's command line that recorded the export load_export takes
    (the last `profile record` typed before it), as words without sudo; for a
    recording, what its trailer says was recorded."""
    if is_recording(src):
        import recording  # noqa: E402
        with open(src, "rb") as f:
            f.seek(max(0, os.path.getsize(src) - recording.TRAILER_SIZE))  # the trailer: the file's end
            data = memoryview(f.read())
        return ["profile", "record"] + recording.command(data).split()
    lines = profdata.console_lines(src)
    begins = [i for i, l in enumerate(lines) if l.strip() == profdata.EXPORT_BEGIN]
    blocks = profdata.export_blocks(lines)
    end = len(lines)
    for i, block in zip(begins, blocks):
        if any(l.startswith("sample ") for l in block):
            end = i
    typed = [l[4:].split() for l in lines[:end] if l.startswith("sh$ ") and "profile record" in l]
    words = typed[-1] if typed else ["profile", "record"]
    return words[1:] if words[:1] == ["sudo"] else words


def do_perfdata(args, src=None):
    src = src or args.input
    p = load_export(args, src, samples="stream")  # a recording's samples on disk: memory for its chains only
    if not p.samples:
        print("profview: %s: no samples" % src, file=sys.stderr)
        return 1
    out = args.output or os.path.join(args.out, "perf.data")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    syms = symbol_dirs(args)
    images = perfdata.image_files(p, syms, os.path.join(os.path.dirname(out) or ".", "perf"))
    with open(out, "wb") as f:
        perfdata.write_perf_data(f, p, syms, lambda: speedscope.sample_interval(p), images, record_command(src))
    if "kernel" in images:
        kernel, build_id = images["kernel"]
        cached = perfdata.cache_kernel(kernel, build_id)
        print("profview: %s %s" % (kernel, "is in perf's build-id cache (%s)" % build_id.hex() if cached else
                                   "(perf is not installed: `perf buildid-cache -a` it to name kernel frames)"))
    print("wrote %s (%d samples; perf report -i %s, hotspot %s)" % (out, len(p.samples), out, out))
    return 0


def write_json(path, doc):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s" % path)


def do_speedscope(args, src=None):
    """OUT/profile.speedscope.json from the last export with samples and
    OUT/profile.trace.json from the last one with context switches."""
    src = src or args.input
    syms = symbol_dirs(args)
    if is_recording(src):
        exports = [profdata.load(src, syms, samples="stream")[0]]  # the samples on disk, read back in time order
    else:
        blocks = profdata.export_blocks(profdata.console_lines(src))
        if not blocks:
            raise ValueError("%s: no export block" % src)
        exports = [profdata.from_export(b, syms, args.title or os.path.basename(src)) for b in blocks]
    sampled = [p for p in exports if p.samples]
    switched = [p for p in exports if p.cswitches]
    if not sampled and not switched:
        print("profview: %s: no samples and no context switches" % src, file=sys.stderr)
        return 1
    if sampled:
        warn(sampled[-1])
        doc = speedscope.speedscope(sampled[-1], args.title or sampled[-1].title)
        write_json(os.path.join(args.out, "profile.speedscope.json"), doc)
        print("profview: %d samples in %d profiles" % (len(sampled[-1].samples), len(doc["profiles"])))
    if switched:
        doc = speedscope.chrome_trace(switched[-1])
        write_json(os.path.join(args.out, "profile.trace.json"), doc)
        print("profview: %d context switches as trace events" % len(switched[-1].cswitches))
    guest = None if is_recording(src) else cswitch_json(profdata.console_lines(src))
    if guest is not None:
        write_json(os.path.join(args.out, "profile.cswitch.json"), guest)
    return 0


def cswitch_json(lines):
    """The trace events `profile report --cswitch --json` printed (the last
    block between its `cswitch-json: begin` and `end` lines), or None."""
    block, cur = None, None
    for line in lines:
        if line.strip() == "cswitch-json: begin":
            cur = []
        elif line.strip() == "cswitch-json: end" and cur is not None:
            block, cur = cur, None
        elif cur is not None:
            cur.append(line)
    return json.loads("\n".join(block)) if block else None


def do_speedscope_run(args):
    args.cswitch = True
    log = record_run(args, "speedscope")
    if log is None:
        return SKIP
    args.title = args.title or args.prog or "calltree"
    return do_speedscope(args, log)


# --- annotate -------------------------------------------------------------------


def annotate_rows(p, image, elf, func):
    """[(address, insn bytes, text, hits, note)] for FUNC: each sample IP to
    its instruction; a histogram bucket to the first instruction starting in
    it (note '~' when others start there too)."""
    insns = profdata.disassemble(elf, func)
    if not insns:
        raise ValueError("objdump finds no function %s in %s" % (func, elf))
    starts = [a for a, _, _ in insns]
    lo = starts[0]
    table = profdata.Symbols(profdata.elf_functions(elf) if not elf.endswith(".nm")
                             else profdata.nm_functions(elf))
    hi = table.end_of(func) or starts[-1] + 16
    hits = dict.fromkeys(starts, 0)
    shared = set()
    for (img, addr), n in p.addr_hits.items():
        if img != image or addr + p.bucket <= lo or addr >= hi:
            continue
        inside = [a for a in starts if addr <= a < addr + p.bucket]
        if inside:
            target = inside[0]
            if len(inside) > 1:
                shared.add(target)
        else:  # the bucket or IP lies inside an instruction: the one containing it
            target = max([a for a in starts if a <= addr] or [lo])
        hits[target] += n
    return [(a, b, t, hits[a], "~" if a in shared else "") for a, b, t in insns]


def print_annotation(p, what, image, elf, func):
    rows = annotate_rows(p, image, elf, func)
    in_func = sum(r[3] for r in rows)
    hottest = sorted({r[3] for r in rows if r[3]}, reverse=True)[:3]
    grain = ("exact sample addresses" if p.bucket == 1 else "%d-byte buckets" % p.bucket)
    print("annotate: %s in %s: %d of %d samples (%s, %s)" % (func, elf, in_func, p.total, what, grain))
    print("%2s %7s %7s %7s  %-8s %-22s %s" % ("", "hits", "%all", "%func", "address", "bytes", "instruction"))
    for addr, raw, text, n, note in rows:
        mark = ">>" if n and n in hottest else ""
        bar = "#" * int(round(20.0 * n / in_func)) if in_func else ""
        print("%2s %7d %7.2f %7.2f  %-8x %-22s %-36s %s%s" % (
            mark, n, 100.0 * n / p.total if p.total else 0, 100.0 * n / in_func if in_func else 0,
            addr, raw, text, note, bar))
    print("annotate: %s: %d samples, %.2f%% of all" % (func, in_func, 100.0 * in_func / p.total if p.total else 0))
    if any(r[4] for r in rows):
        print("annotate: ~ = the bucket holding this instruction also holds the next one's start; "
              "its hits are shown on the first (profile run -b 2 is the finest)")
    return 0


def pick_image(p, prog):
    if prog:
        return prog
    names = {name for _, name, _, _ in p.images if name != "kernel"}
    if len(names) == 1:
        return names.pop()
    raise ValueError("which program? give --prog (images: %s)" % ", ".join(sorted(names)))


def do_annotate(args):
    syms = symbol_dirs(args)
    p, what = profdata.load(args.input, syms, samples=False)
    image = pick_image(p, args.prog)
    elf = syms.path(image)
    if elf is None:
        raise ValueError("no symbol table for %s" % image)
    return print_annotation(p, what, image, elf, args.func)


# --- diff -----------------------------------------------------------------------


def diff_rows(a, b):
    """(function, hits a, % a, hits b, % b, delta points), by |delta| then name."""
    fa, fb = a.function_hits(), b.function_hits()
    rows = []
    for f in set(fa) | set(fb):
        pa = 100.0 * fa[f] / a.total if a.total else 0.0
        pb = 100.0 * fb[f] / b.total if b.total else 0.0
        rows.append((f, fa[f], pa, fb[f], pb, pb - pa))
    rows.sort(key=lambda r: (-abs(r[5]), r[0]))
    return rows


def diff_tree(a, b):
    """B's tree (widths), each node with its inclusive share in A and B (pa,
    pb) and delta, the change in B's samples (d3-flame-graph's differential
    colours)."""
    ta, tb = a.tree(), b.tree()

    def index(node, path, out):
        out[path] = node["value"]
        for c in node["children"]:
            index(c, path + (c["name"],), out)
        return out

    va = index(ta, (), {})

    def walk(node, path):
        pa = 100.0 * va.get(path, 0) / a.total if a.total else 0.0
        pb = 100.0 * node["value"] / b.total if b.total else 0.0
        return {"name": node["name"], "value": node["value"], "pa": pa, "pb": pb,
                "delta": (pb - pa) * b.total / 100.0,
                "children": [walk(c, path + (c["name"],)) for c in node["children"]]}

    return walk(tb, ())


def print_diff(a, b, a_name, b_name, top):
    rows = diff_rows(a, b)
    print("diff: A = %s (%d samples), B = %s (%d samples)" % (a_name, a.total, b_name, b.total))
    print("%-32s %8s %7s %8s %7s %8s" % ("function", "hits A", "% A", "hits B", "% B", "delta"))
    for f, ha, pa, hb, pb, d in rows[:top]:
        print("%-32s %8d %7.2f %8d %7.2f %+8.2f" % (f, ha, pa, hb, pb, d))
    if len(rows) > top:
        print("(%d more functions)" % (len(rows) - top))
    if rows:
        print("diff: largest change %.2f points (%s)" % (abs(rows[0][5]), rows[0][0]))
    return rows


def do_diff(args, a_spec=None, b_spec=None):
    syms = symbol_dirs(args)
    a_spec, b_spec = a_spec or args.a, b_spec or args.b
    a, _ = profdata.load(a_spec, syms, samples=False)
    b, _ = profdata.load(b_spec, syms, samples=False)
    warn(a)
    warn(b)
    a_name = args.a_name or a_spec
    b_name = args.b_name or b_spec
    print_diff(a, b, a_name, b_name, args.top)
    if args.html:
        write(args.html, pages.diff_page(diff_rows(a, b), diff_tree(a, b), a_name, b_name, args.vendor))
    return 0


# --- sessions in QEMU -----------------------------------------------------------


def boot(commands, log, timeout, qemu=None, what=None):
    """Boots build/tests/shell.iso (under QEMU, or the command line QEMU), types
    COMMANDS and poweroff, saves the console (without carriage returns) in
    LOG; returns its lines."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    print("profview: booting QEMU (%s): %s" % (what or "TCG, -smp 2, " + " ".join(ICOUNT_ARGS), "; ".join(commands)))
    stdin = "".join(c + "\n" for c in commands + ["poweroff"])
    try:
        r = subprocess.run((qemu or QEMU) + ["-cdrom", "build/tests/shell.iso"], input=stdin.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        print("profview: QEMU timed out after %d s" % timeout, file=sys.stderr)
    text = out.decode("utf-8", "replace").replace("\r", "")
    with open(log, "w", encoding="utf-8") as f:
        f.write(text)
    print("profview: console in %s" % log)
    return text.splitlines()


def section(lines, cmd):
    """The lines from the prompt that echoes CMD to the next prompt."""
    out, on = [], False
    for line in lines:
        if line.startswith("sh$ "):
            if on:
                break
            on = line == "sh$ " + cmd
        if on:
            out.append(line)
    return out


def rejects_record(lines, cmd):
    return any("unknown command 'record'" in l for l in section(lines, cmd))


def save_section(lines, cmd, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(section(lines, cmd)) + "\n")
    return path


# The recordings are made with sudo, and a privileged recording is private to
# the privileged user (kernel/lib/abi/syscalls.h: /tmp's owners and modes):
# each report of one is read with sudo too.


def do_flamegraph(args):
    prog = args.prog or "calltree"
    record = "sudo profile record -g " + prog
    lines = boot([record, "sudo profile report --export"], os.path.join(args.out, "flamegraph", "console.log"),
                 args.timeout)
    if rejects_record(lines, record):
        print("profview: guest has no 'profile record' yet (%s)" % record)
        return SKIP
    if not profdata.export_blocks(lines):
        print("profview: no export block on the console; the session said:", file=sys.stderr)
        print("\n".join(section(lines, record)[-10:]), file=sys.stderr)
        return 1
    args.title = args.title or prog
    return do_export(args, os.path.join(args.out, "flamegraph", "console.log"))


def record_run(args, subdir):
    """Records PROG with call chains, kernel frames included, and saves the
    export's console section; returns its path, or None (SKIP) when the
    guest has no `profile record`."""
    prog = args.prog or "calltree"
    record = "sudo profile record -g -k " + prog
    cmds = [record, "sudo profile report --export"]
    if getattr(args, "cswitch", False):
        cmds += ["sudo profile record --cswitch " + prog, "sudo profile report --export",
                 "sudo profile report --cswitch --json"]
    outdir = os.path.join(args.out, subdir)
    log = os.path.join(outdir, "console.log")
    lines = boot(cmds, log, args.timeout)
    if rejects_record(lines, record):
        print("profview: guest has no 'profile record' yet (%s)" % record)
        return None
    if not profdata.export_blocks(lines):
        raise ValueError("no export block on the console (see %s)" % log)
    return log


def record_commands(prog, seconds):
    """The guest's commands of `make record`: PROG with call chains and the
    kernel's frames; with SECONDS, the whole machine for that long (PROG, if
    any, running beside it)."""
    if not seconds:
        return ["sudo profile record --host -g -k " + (prog or "calltree")]
    return ([prog + " &"] if prog else []) + ["sudo profile record --host -g -a %d" % seconds]


def do_record_run(args):
    """OUT/recording.bin: a recording made in the guest and streamed to the
    host's file while it records (make record); the one before is kept as
    OUT/recording.old.bin."""
    out = os.path.join(args.out, "recording.bin")
    if os.path.exists(out):
        os.replace(out, os.path.join(args.out, "recording.old.bin"))
    try:
        open(out, "wb").close()  # an unwritable place fails here, before the boot
    except OSError as e:
        raise ValueError("cannot write the recording to %s: %s" % (out, e.strerror))
    qemu = [QEMU_BIN, "-machine", "pc", "-boot", "d", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-display", "none", "-monitor", "none", "-serial", "stdio", "-smp", str(args.smp), "-m", "512M"]
    qemu += (args.accel or "-cpu max").split() + host_recording(out)
    lines = boot(record_commands(args.prog, args.seconds), os.path.join(args.out, "record", "console.log"),
                 args.timeout + args.seconds, qemu, "-smp %d, %s" % (args.smp, args.accel or "TCG -cpu max"))
    said = [l for l in lines if l.startswith("record: ") or l.startswith("profile: ")]
    print("\n".join(said[-4:]))
    if not os.path.getsize(out):
        qemu_said = [l for l in lines if "qemu-system" in l][:1]
        raise ValueError("no recording came back in %s (%s)" % (
            out, qemu_said[0] if qemu_said else "see " + os.path.join(args.out, "record", "console.log")))
    p, what = profdata.load(out, symbol_dirs(args), samples=False)
    warn(p)
    print("profview: %s: %d bytes, %d samples (%s); convert it with make perf-data, flamegraph, speedscope or "
          "annotate RECORDING=%s" % (out, os.path.getsize(out), p.total, what, out))
    return 0 if p.total else 1


def do_perfdata_run(args):
    log = record_run(args, "perf-data")
    if log is None:
        return SKIP
    return do_perfdata(args, log)


def do_annotate_run(args):
    prog = args.prog or "calib"
    func = args.func or ("calib_a" if prog.split()[0] == "calib" else "main")
    record = "sudo profile record " + prog
    flat = "sudo profile run -b 2 -g " + prog
    outdir = os.path.join(args.out, "annotate")
    lines = boot([record, "sudo profile report --export", flat], os.path.join(outdir, "console.log"), args.timeout)
    name = prog.split()[0]
    if profdata.export_blocks(lines):  # exact sample addresses
        src = save_section(lines, "sudo profile report --export", os.path.join(outdir, "record.log"))
    else:
        if rejects_record(lines, record):
            print("profview: guest has no 'profile record' yet: annotating the flat profile (-b 2)")
        src = save_section(lines, flat, os.path.join(outdir, "flat.log"))
    syms = symbol_dirs(args)
    p, what = profdata.load(src, syms)
    elf = syms.path(name)
    if elf is None:
        raise ValueError("no symbol table for %s" % name)
    return print_annotation(p, what, name, elf, func)


def side_commands(side, prog):
    """'run -b 2' -> the flat profile with its gmon.out; 'record ...' -> the
    recorded profile and its export."""
    words = side.split()
    if not words or words[0] not in ("run", "record"):
        raise ValueError("a side is 'run OPTIONS' or 'record OPTIONS', not %r" % side)
    if words[0] == "run":
        return ["sudo profile run -g %s %s" % (" ".join(words[1:]), prog)]
    return ["sudo profile record -g %s %s" % (" ".join(words[1:]), prog), "sudo profile report --export"]


def do_diff_run(args):
    prog = args.prog or "calib"
    outdir = os.path.join(args.out, "profile-diff")
    ca, cb = side_commands(args.a_side, prog), side_commands(args.b_side, prog)
    cmds = [" ".join(c.split()) for c in ca + cb]
    lines = boot(cmds, os.path.join(outdir, "console.log"), args.timeout)
    if rejects_record(lines, cmds[0]) or rejects_record(lines, cmds[len(ca)]):
        print("profview: guest has no 'profile record' yet")
        return SKIP
    a = save_section(lines, cmds[len(ca) - 1], os.path.join(outdir, "a.log"))
    b = save_section(lines, cmds[-1], os.path.join(outdir, "b.log"))
    args.a_name = args.a_name or "%s (%s)" % (prog, args.a_side)
    args.b_name = args.b_name or "%s (%s)" % (prog, args.b_side)
    args.html = args.html or os.path.join(args.out, "profile-diff.html")
    return do_diff(args, a, b)


# Options more than one subcommand takes.
OUT = [("--out", dict(default="build"))]
TITLED = OUT + [("--title", {})]
DIFF_OUTPUT = [("--html", {}), ("--a-name", {}), ("--b-name", {}), ("--top", dict(type=int, default=30))]

# Each subcommand: what runs it, and its arguments in order.
PERF_OUTPUT = [("-o", dict(dest="output", help="the file (default OUT/perf.data)"))]
COMMANDS = {
    "export": (do_export, [("input", {})] + TITLED),
    "folded": (do_folded, [("input", {})]),
    "annotate": (do_annotate, [("input", {}), ("--func", dict(required=True)), ("--prog", {})]),
    "diff": (do_diff, [("a", {}), ("b", {})] + DIFF_OUTPUT),
    "flamegraph": (do_flamegraph, [("--prog", {})] + TITLED),
    "perfdata": (do_perfdata, [("input", {})] + OUT + PERF_OUTPUT),
    "perf-data-run": (do_perfdata_run, [("--prog", {})] + OUT + PERF_OUTPUT),
    "speedscope": (do_speedscope, [("input", {})] + TITLED),
    "speedscope-run": (do_speedscope_run, [("--prog", {})] + TITLED),
    "record-run": (do_record_run, [("--prog", {}), ("--seconds", dict(type=int, default=0)),
                                   ("--smp", dict(type=int, default=4)), ("--accel", {})] + OUT),
    "annotate-run": (do_annotate_run, [("--prog", {}), ("--func", {})] + OUT),
    "diff-run": (do_diff_run, [("--prog", {}), ("--a", dict(dest="a_side", default="run -b 2")),
                               ("--b", dict(dest="b_side", default="run -b 8"))] + OUT + DIFF_OUTPUT),
}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="profview.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elf-dir", action="append", help="where program ELF files are (build/userland)")
    ap.add_argument("--kernel", default="build/kernel.elf", help="the kernel ELF")
    ap.add_argument("--vendor", default="build/profview/node_modules", help="the installed renderer")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for a QEMU session")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (_, arguments) in COMMANDS.items():
        s = sub.add_parser(name)
        for flag, options in arguments:
            s.add_argument(flag, **options)
    args = ap.parse_args(argv)
    run = COMMANDS[args.cmd][0]
    try:
        return run(args)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print("profview: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
