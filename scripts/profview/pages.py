"""Self-contained HTML pages of a profile: the flame graph alone, the report
(kernrate-style tables, per-process and per-CPU views, the flame graph) and
the differential flame graph of two profiles.

Every script and style is inlined, so a page works from file:// with no
network. The flame graph is drawn by d3-flame-graph (npm, pinned by
scripts/profview/package-lock.json and installed into build/profview by
`make profview-vendor`) from a JSON tree embedded in the page; page.js wires
it up. The tables are plain HTML, readable without JavaScript.
"""
import html
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# d3-flame-graph's UMD build reads the d3 modules from the global `d3`; each
# module's own UMD build adds itself there. Dependencies come first.
VENDOR_SCRIPTS = [
    "internmap/dist/internmap.min.js",
    "d3-array/dist/d3-array.min.js",
    "d3-color/dist/d3-color.min.js",
    "d3-interpolate/dist/d3-interpolate.min.js",
    "d3-format/dist/d3-format.min.js",
    "d3-time/dist/d3-time.min.js",
    "d3-time-format/dist/d3-time-format.min.js",
    "d3-scale/dist/d3-scale.min.js",
    "d3-selection/dist/d3-selection.min.js",
    "d3-dispatch/dist/d3-dispatch.min.js",
    "d3-timer/dist/d3-timer.min.js",
    "d3-ease/dist/d3-ease.min.js",
    "d3-transition/dist/d3-transition.min.js",
    "d3-hierarchy/dist/d3-hierarchy.min.js",
    "d3-flame-graph/dist/d3-flamegraph.umd.min.js",
]
VENDOR_STYLES = ["d3-flame-graph/dist/d3-flamegraph.css"]


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _script(text):
    return "<script>\n%s\n</script>" % text.replace("</script", "<\\/script")


def _json(element_id, value):
    text = json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")
    return '<script type="application/json" id="%s">%s</script>' % (element_id, text)


def _vendor(vendor_dir):
    missing = [p for p in VENDOR_SCRIPTS + VENDOR_STYLES if not os.path.isfile(os.path.join(vendor_dir, p))]
    if missing:
        raise FileNotFoundError("%s: no %s (make profview-vendor installs the renderer)"
                                % (vendor_dir, missing[0]))
    styles = "".join("<style>\n%s\n</style>\n" % _read(os.path.join(vendor_dir, p)) for p in VENDOR_STYLES)
    scripts = "\n".join(_script(_read(os.path.join(vendor_dir, p))) for p in VENDOR_SCRIPTS)
    return styles, scripts


def _page(title, body, data, vendor_dir):
    styles, scripts = _vendor(vendor_dir)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>%s</title>" % html.escape(title),
        styles,
        "<style>\n%s\n</style>" % _read(os.path.join(HERE, "page.css")),
        "</head><body>",
        body,
        "\n".join(_json(k, v) for k, v in data.items()),
        scripts,
        _script(_read(os.path.join(HERE, "page.js"))),
        "</body></html>",
    ])


def _flame(element_id, source, caption, kind="flame"):
    return ('<div class="flame-box">\n<div class="flame-bar"><input type="search" placeholder="search functions" '
            'data-for="%(id)s"> <button data-reset="%(id)s">reset zoom</button> '
            '<span class="details" id="%(id)s-details"></span></div>\n'
            '<div class="flame" id="%(id)s" data-source="%(src)s" data-kind="%(kind)s"></div>\n'
            '<p class="caption">%(cap)s</p></div>') % {
                "id": element_id, "src": source, "kind": kind, "cap": caption}


def _table(headers, rows, cls="num"):
    out = ['<table class="%s"><thead><tr>' % cls]
    out += ["<th>%s</th>" % html.escape(h) for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def pct(n, total):
    return "%.2f%%" % (100.0 * n / total) if total else "-"


def _top(counter, n=3):
    from profdata import label
    return ", ".join("%s %d" % (label(i, f), h) for (i, f), h in counter.most_common(n))


def flame_caption(p):
    return ("Each box is a function; its width is its share of the %d samples (the function and "
            "everything it called). A box stands on its caller. Click to zoom; "
            "hover for the count." % p.total)


def flamegraph_page(p, vendor_dir):
    body = "<h1>Flame graph: %s</h1>\n%s" % (html.escape(p.title), _flame("flame", "tree", flame_caption(p)))
    return _page("flame graph: " + p.title, body, {"tree": p.tree()}, vendor_dir)


def report_page(p, vendor_dir, folded_name="profile.folded"):
    total = p.total
    parts = ["<h1>Profile: %s</h1>" % html.escape(p.title)]
    summary = [("Samples", total), ("Kind", {"export": "call stacks (profile record)", "flat":
                                           "histogram (profile run -g)", "folded": "folded stacks"}[p.kind])]
    if p.kind == "flat":
        summary.append(("Bucket size", "%d bytes" % p.bucket))
    if p.by_cpu:
        summary.append(("CPUs with samples", len(p.by_cpu)))
    if p.by_pid:
        summary.append(("Processes with samples", len(p.by_pid)))
    if p.kind == "export":
        summary.append(("Lost samples", sum(p.lost.values())))
    parts.append(_table(["", ""], summary, "summary"))
    for w in p.warnings:
        parts.append('<p class="warning">%s</p>' % html.escape(w))

    parts.append('<h2 id="flame-graph">Flame graph</h2>')
    parts.append(_flame("flame", "tree", flame_caption(p)))
    data = {"tree": p.tree()}
    if p.offcpu:
        parts.append(offcpu_view(p))
        data["offtree"] = p.tree(p.off_stacks)
    if p.samples:
        parts.append('<h2 id="time">Time</h2><p class="caption">The run from its first sample to its last '
                     'in %d slices, a row per CPU and per process: each cell is coloured by the function '
                     'most of its samples were in, darker with more samples (hover for the counts).</p>'
                     % TIME_BUCKETS)
        parts.append(time_view(p))
    parts.append('<h2 id="sandwich">Sandwich</h2>')
    parts.append(sandwich_view(p))

    # Kernrate's tables: modules, then each module's functions (self hits).
    modules = {}
    for (image, func), n in p.self_hits.items():
        modules.setdefault(image or "-", []).append((func, n))
    incl = p.inclusive_hits()
    parts.append('<h2 id="modules">Modules</h2>')
    parts.append(_table(["Module", "Hits", "%Total"],
                        [(m, sum(n for _, n in fs), pct(sum(n for _, n in fs), total))
                         for m, fs in sorted(modules.items(), key=lambda kv: -sum(n for _, n in kv[1]))]))
    for m, fs in sorted(modules.items(), key=lambda kv: -sum(n for _, n in kv[1])):
        from profdata import label
        rows, cum = [], 0
        for func, n in sorted(fs, key=lambda fn: (-fn[1], fn[0])):
            cum += n
            name = label(m, func)
            rows.append((name, n, pct(n, total), pct(cum, total), incl.get(name, n), pct(incl.get(name, n), total)))
        parts.append('<h3>Zoomed module %s</h3>' % html.escape(m))
        parts.append(_table(["Function", "Hits", "%Total", "Cumulative", "Inclusive", "%Inclusive"], rows,
                            "num functions"))

    if p.by_pid:
        parts.append('<h2 id="processes">Processes</h2>')
        rows = []
        for pid, c in sorted(p.by_pid.items(), key=lambda kv: -sum(kv[1].values())):
            n = sum(c.values())
            rows.append((pid, p.pid_names.get(pid, "?"), n, pct(n, total), p.mode_by_pid[pid]["u"],
                         p.mode_by_pid[pid]["k"], _top(c)))
        parts.append(_table(["PID", "Name", "Hits", "%Total", "User", "Kernel", "Top functions"], rows))
    if p.by_cpu or p.lost:
        parts.append('<h2 id="cpus">CPUs</h2>')
        rows = []
        for cpu in sorted(set(p.by_cpu) | set(p.lost)):
            c = p.by_cpu.get(cpu, {})
            n = sum(c.values()) if c else 0
            rows.append((cpu, n, pct(n, total), p.mode_by_cpu[cpu]["u"], p.mode_by_cpu[cpu]["k"], p.lost[cpu],
                         _top(c) if c else ""))
        parts.append(_table(["CPU", "Hits", "%Total", "User", "Kernel", "Lost", "Top functions"], rows))

    parts.append('<h2 id="folded">Folded stacks</h2><p>The same stacks as <code>%s</code> '
                 '(loads in speedscope and FlameGraph):</p><pre class="folded">%s</pre>'
                 % (html.escape(folded_name), html.escape("\n".join(p.folded_lines()))))
    if p.offcpu:
        parts.append('<h2 id="off-cpu-folded">Off-CPU folded stacks</h2><p>Microseconds away, the reason '
                     'as the leaf:</p><pre class="folded">%s</pre>' % html.escape("\n".join(p.off_folded_lines())))
    data["stacks"] = [[list(st), n] for st, n in sorted(p.stacks.items()) if n]
    return _page("profile: " + p.title, "\n".join(parts), data, vendor_dir)


def offcpu_times(p):
    """{pid: (on-CPU ns, {reason: [ns, switches]})}: time on the CPU (the
    samples times the interval, when the source is ProfileTime) and away by
    reason."""
    import collections
    unit = p.sources.get(0, 0) * 100  # ProfileTime's interval is in 100 ns units
    out = {}
    for pid in sorted({o.pid for o in p.offcpu}):
        on = unit * sum(1 for s in p.samples if s.pid == pid and s.source == 0)
        away = collections.OrderedDict()
        for o in p.offcpu:
            if o.pid == pid:
                row = away.setdefault(o.reason, [0, 0])
                row[0] += o.off_ns
                row[1] += 1
        out[pid] = (on, away)
    return out


def offcpu_view(p):
    """The off-CPU flame graph beside the on-CPU one, and each process's
    time on and off the CPU by reason (Brendan Gregg, "Off-CPU Analysis")."""
    from profdata import reason_name
    rows = []
    for pid, (on, away) in offcpu_times(p).items():
        total = on + sum(ns for ns, _ in away.values())
        name = "%s (pid %d)" % (p.pid_names.get(pid, "?"), pid)
        rows.append((name, "on-CPU", "%.3f" % (on / 1e6), pct(on, total), "-"))
        for reason, (ns, n) in sorted(away.items(), key=lambda kv: -kv[1][0]):
            rows.append((name, reason_name(reason), "%.3f" % (ns / 1e6), pct(ns, total), n))
    total_us = sum(p.off_stacks.values())
    return "\n".join([
        '<h2 id="off-cpu">Off-CPU flame graph</h2>',
        _flame("offflame", "offtree", "Where the program waited instead of running: each switch-out's "
               "stack, the reason it left on top ([sleep], [child], [console], [mutex], [runnable]: "
               "preempted or yielded), widths the %.3f ms spent away. The on-CPU graph above cannot "
               "show this time; this one cannot show computing." % (total_us / 1e3)),
        _table(["Process", "State", "ms", "% of its time", "Switches"], rows)])


# --- the time view and the sandwich view ------------------------------------------------

TIME_BUCKETS = 100
PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
OTHER_COLOUR = "#999999"


def time_rows(p, buckets=TIME_BUCKETS):
    """(span in ns, [(row label, kind, [Counter of leaf labels per bucket])]):
    one row per CPU, then one per process, the samples of each bucket of the
    recording's time by the function they were in."""
    import collections
    from profdata import label
    times = [p.ns(s.tsc) for s in p.samples]
    span = max(times + [p.ns(o.tsc) + o.off_ns for o in p.offcpu]) + 1 if times else 1
    rows = collections.OrderedDict()
    names = dict(p.pid_names)
    names[0] = "idle"
    for s in sorted(p.samples, key=lambda s: s.cpu):
        rows.setdefault(("cpu %d" % s.cpu, "cpu"), [collections.Counter() for _ in range(buckets)])
    for s in sorted(p.samples, key=lambda s: s.pid):
        rows.setdefault(("%s (pid %d)" % (names.get(s.pid, "?"), s.pid), "pid"),
                        [collections.Counter() for _ in range(buckets)])
    for s, t in zip(p.samples, times):
        b = min(buckets - 1, t * buckets // span)
        leaf = label(s.frames[0][2], s.frames[0][3])
        rows[("cpu %d" % s.cpu, "cpu")][b][leaf] += 1
        rows[("%s (pid %d)" % (names.get(s.pid, "?"), s.pid), "pid")][b][leaf] += 1
    return span, [(k[0], k[1], v) for k, v in rows.items()]


def off_cells(p, name_of_pid, span, buckets=TIME_BUCKETS):
    """{row label: [Counter of reason -> ns away, per bucket]}: each
    off-CPU interval spread over the buckets it covers."""
    import collections
    from profdata import reason_name
    out = {}
    for o in p.offcpu:
        cells = out.setdefault(name_of_pid(o.pid), [collections.Counter() for _ in range(buckets)])
        t0 = p.ns(o.tsc)
        t1 = t0 + o.off_ns
        for b in range(max(0, t0 * buckets // span), min(buckets - 1, t1 * buckets // span) + 1):
            lo, hi = max(t0, span * b // buckets), min(t1, span * (b + 1) // buckets)
            if hi > lo:
                cells[b][reason_name(o.reason)] += hi - lo
    return out


OFF_COLOURS = {"sleep": "#c7c7c7", "child": "#aec7e8", "console": "#ffbb78", "mutex": "#ff9896",
               "runnable": "#f7b6d2", "other": "#dbdb8d"}


def gap_rects(name, cells, span, left, y, cell_w, cell_h):
    """A process row's off-CPU gaps: a pale cell, coloured by the reason with
    the most time, where the process was away from the CPU."""
    out = []
    for b, c in enumerate(cells):
        if not c:
            continue
        reason, ns = c.most_common(1)[0]
        t0, t1 = span * b // TIME_BUCKETS, span * (b + 1) // TIME_BUCKETS
        tip = "%s, %.3f-%.3f ms: off CPU %s" % (name, t0 / 1e6, t1 / 1e6, ", ".join(
            "%s %.3f ms" % (r, n / 1e6) for r, n in c.most_common()))
        out.append('<rect class="gap" data-row="%s" data-kind="off" data-bucket="%d" data-reason="%s" '
                   'x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>' % (
                       html.escape(name), b, reason, left + b * cell_w, y + 5, cell_w, cell_h - 10,
                       OFF_COLOURS.get(reason, OTHER_COLOUR), html.escape(tip)))
    return out


def time_view(p):
    """An SVG: a row per CPU and per process, a cell per 1/100 of the run,
    coloured by the function most of its samples were in, darker with more
    samples; its <title> says the cell's time, samples and top functions."""
    import collections
    span, rows = time_rows(p)
    overall = collections.Counter()
    for _, _, cells in rows:
        for c in cells:
            overall.update(c)
    colours = {f: PALETTE[i] for i, (f, _) in enumerate(overall.most_common(len(PALETTE)))}
    peak = max([sum(c.values()) for _, _, cells in rows for c in cells] or [1]) or 1
    left, cell_w, cell_h = 170, 8, 18
    width, height = left + cell_w * TIME_BUCKETS + 10, cell_h * (len(rows) + 1) + 20
    # The viewBox lets a printout scale the view down to the page (page.css).
    out = ['<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'data-span-ns="%d">' % (width, height, width, height, span)]
    names = dict(p.pid_names)
    gaps = off_cells(p, lambda pid: "%s (pid %d)" % (names.get(pid, "?"), pid), span)
    for r, (name, kind, cells) in enumerate(rows):
        y = r * cell_h
        out.append('<text x="0" y="%d" class="row-label">%s</text>' % (y + 13, html.escape(name)))
        if kind == "pid" and name in gaps:
            out += gap_rects(name, gaps[name], span, left, y, cell_w, cell_h)
        for b, c in enumerate(cells):
            n = sum(c.values())
            if not n:
                continue
            top = c.most_common(1)[0][0]
            t0, t1 = span * b // TIME_BUCKETS, span * (b + 1) // TIME_BUCKETS
            tip = "%s, %.3f-%.3f ms: %d samples; %s" % (name, t0 / 1e6, t1 / 1e6, n, ", ".join(
                "%s %d" % fn for fn in c.most_common(3)))
            out.append('<rect class="cell" data-row="%s" data-kind="%s" data-bucket="%d" data-count="%d" '
                       'data-top="%s" x="%d" y="%d" width="%d" height="%d" fill="%s" fill-opacity="%.2f">'
                       '<title>%s</title></rect>' % (
                           html.escape(name), kind, b, n, html.escape(top), left + b * cell_w, y + 1, cell_w,
                           cell_h - 2, colours.get(top, OTHER_COLOUR), 0.3 + 0.7 * n / peak, html.escape(tip)))
    y = len(rows) * cell_h + 14
    out.append('<text x="%d" y="%d" class="axis">0 ms</text>' % (left, y))
    out.append('<text x="%d" y="%d" class="axis" text-anchor="end">%.3f ms</text>'
               % (left + cell_w * TIME_BUCKETS, y, span / 1e6))
    out.append("</svg>")
    legend = " ".join('<span class="swatch" style="background:%s"></span>%s' % (c, html.escape(f))
                      for f, c in colours.items())
    if p.offcpu:
        legend += " &mdash; off CPU (thin cells): " + " ".join(
            '<span class="swatch" style="background:%s"></span>%s' % (c, r if r != "other" else "other wait")
            for r, c in OFF_COLOURS.items())
    return ("\n".join(out) + '<p class="legend">%s <span class="swatch" style="background:%s"></span>other</p>'
            % (legend, OTHER_COLOUR))


def sandwich_view(p):
    """A function picker and two flame graphs page.js draws: the picked
    function's callers (it at the bottom, its callers stacked above) and its
    callees (it at the top, what it called below)."""
    incl = p.inclusive_hits()
    options = "".join('<option value="%s">%s (%s)</option>' % (html.escape(f), html.escape(f), pct(n, p.total))
                      for f, n in sorted(incl.items(), key=lambda kv: (-kv[1], kv[0])))
    return ('<p><label>Function: <select id="sandwich-func">%s</select></label> '
            '<span class="details" id="sandwich-details"></span></p>\n'
            '<p class="caption">Callers: the function at the bottom, each caller above what it called '
            '(widths: the function\'s samples through that caller).</p>\n'
            '<div class="sandwich-flame" id="sandwich-callers" data-kind="callers"></div>\n'
            '<p class="caption">Callees: the function at the top, what it called below.</p>\n'
            '<div class="sandwich-flame" id="sandwich-callees" data-kind="callees"></div>' % options)


def diff_page(rows, tree, a_title, b_title, vendor_dir):
    """rows: (function, hits a, % a, hits b, % b, delta points)."""
    body = ["<h1>Profile diff: %s &rarr; %s</h1>" % (html.escape(a_title), html.escape(b_title)),
            '<h2 id="differential">Differential flame graph</h2>',
            _flame("flame", "tree", "Widths are the second profile (%s). Red: the frame's share grew since "
                   "the first (%s); blue: it shrank; the deeper the colour, the larger the change "
                   "relative to the frame. Hover for both shares." % (html.escape(b_title), html.escape(a_title)),
                   "diff"),
            '<h2 id="functions">Functions by change</h2>',
            _table(["Function", "Hits A", "% A", "Hits B", "% B", "Delta (points)"],
                   [(f, ha, "%.2f" % pa, hb, "%.2f" % pb, "%+.2f" % d) for f, ha, pa, hb, pb, d in rows],
                   "num functions")]
    return _page("profile diff", "\n".join(body), {"tree": tree}, vendor_dir)
