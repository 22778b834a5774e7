"""A recording in speedscope's file format, with real time; and its context
switches as Chrome trace events.

speedscope (https://www.speedscope.app, file format in speedscope's
src/lib/file-format-spec.ts, schema file-format-schema.json): one "sampled"
profile per process and one per CPU, all sharing one frame table. A profile's
samples are stacks of frame indices, root first, in time order; its weights
are nanoseconds. Each sample weighs the sampling interval (the median gap
between a CPU's consecutive samples), and where a profile has no sample for
longer than that an empty stack fills the gap, so speedscope's Time Order
view is the recording's timeline: a sample's position is its time since the
recording's first record (startValue 0).

An off-CPU recording (profile record --off-cpu) adds, per process, a
sampled profile of its time away: each switch-out's stack with the reason
as its leaf frame, weighing the nanoseconds until the switch-in, in time
order with empty stacks where the process ran (Brendan Gregg's off-CPU
flame graph; speedscope's Left Heavy view is that graph).

Chrome trace events (the Trace Event Format document of Chromium's catapult
project: docs/trace-event-format.md), from the export's `cswitch` lines: one
track (tid) per CPU under one process "CPUs", a complete event ("ph": "X") for
each stretch a thread ran on it, and the CPU's counters at each switch as
counter events ("ph": "C"); timestamps in microseconds.
"""
import collections
import operator
import statistics

import profdata

SCHEMA = "https://www.speedscope.app/file-format-schema.json"

# The software events' names (PMC_EVENT_SW(0) is 256), as `profile stat` says them.
SW_EVENTS = ["task-clock", "context-switches", "cpu-migrations", "page-faults",
             "system-calls", "profile-interrupts", "profile-ticks"]


def sample_interval(p):
    """The sampling interval in ns: the median gap between consecutive
    samples of one CPU (1 ms when there is no such gap)."""
    by_cpu = collections.defaultdict(list)
    # (tsc, cpu, ...) of each sample: a recording's on disk (recording.StreamedSamples) makes no Sample for it
    rows = p.samples.rows() if hasattr(p.samples, "rows") else ((s.tsc, s.cpu) for s in p.samples)
    for row in rows:
        by_cpu[row[1]].append(row[0])
    p.ns(0)
    t0, hz, gaps = p._t0[1], p.tsc_hz or 10 ** 9, []
    for tscs in by_cpu.values():
        times = [(t - t0) * 10 ** 9 // hz for t in sorted(tscs)]  # p.ns, inline
        gaps += [b - a for a, b in zip(times, times[1:]) if b > a]
    return int(statistics.median(gaps)) if gaps else 1000000


class Frames:
    """speedscope's shared frame table: one entry per (image, function)."""

    def __init__(self):
        self.index = {}
        self.table = []

    def of(self, image, func):
        key = (image, func)
        if key not in self.index:
            self.index[key] = len(self.table)
            self.table.append({"name": profdata.label(image, func), "file": image})
        return self.index[key]


class Sampled:
    """One sampled profile, its samples added in time order, in nanoseconds
    since the recording's start; gaps longer than the interval are empty
    stacks. A sample holds its chain's frames list (shared by the chain's
    samples) and a weight: no object of its own."""

    def __init__(self, ns, interval):
        self.ns, self.interval = ns, interval
        self.chains, self.weights = [], []  # a frames list, or None for a gap
        self.count, self.start, self.end = 0, None, None

    def add(self, s):
        t = self.ns(s.tsc)
        if self.end is None:
            self.start = self.end = t
        elif t > self.end:
            self.chains.append(None)
            self.weights.append(t - self.end)
        self.chains.append(s.frames)
        self.weights.append(self.interval)
        self.end = max(self.end, t) + self.interval
        self.count += 1

    def doc(self, name, frames):
        """The profile, its frames numbered in FRAMES as its samples first name them."""
        known, stacks = {None: []}, []
        for chain in self.chains:
            stack = known.get(id(chain) if chain is not None else None)
            if stack is None:
                stack = known[id(chain)] = [frames.of(image, func) for _, _, image, func in reversed(chain)]
            stacks.append(stack)
        return {"type": "sampled", "name": name, "unit": "nanoseconds", "startValue": self.start or 0,
                "endValue": self.end or 0, "samples": stacks, "weights": self.weights}


def offcpu_profile(name, records, p, frames):
    """A process's off-CPU stacks (in time order), weighted by the time
    away; the time between them (on the CPU) is an empty stack."""
    stacks, weights = [], []
    start = end = None
    for o in records:
        t = p.ns(o.tsc)
        if end is None:
            start = end = t
        elif t > end:
            stacks.append([])
            weights.append(t - end)
        stacks.append([frames.of(image, func) for _, _, image, func in reversed(o.frames)] +
                      [frames.of("", "[%s]" % profdata.reason_name(o.reason))])
        weights.append(o.off_ns)
        end = max(end, t) + o.off_ns
    return {"type": "sampled", "name": name, "unit": "nanoseconds", "startValue": start or 0,
            "endValue": end or 0, "samples": stacks, "weights": weights}


def speedscope(p, title):
    """The speedscope document of an export's samples."""
    with profdata.no_gc():
        return _speedscope(p, title)


def _speedscope(p, title):
    frames = Frames()
    interval = sample_interval(p)
    # A recording's samples on disk (recording.StreamedSamples) come back in time order, one at a time.
    ordered = p.samples.in_time_order() if hasattr(p.samples, "in_time_order") else \
        sorted(p.samples, key=operator.attrgetter("tsc"))
    names = {pid: name for pid, name, _, _ in p.images if pid}
    names[0] = "idle"
    ns = p.ns_function()
    by_pid, by_cpu = {}, {}
    for s in ordered:
        for profiles, key in ((by_pid, s.pid), (by_cpu, s.cpu)):
            profile = profiles.get(key)
            if profile is None:
                profile = profiles[key] = Sampled(ns, interval)
            profile.add(s)
    profiles = []
    for pid in sorted(by_pid, key=lambda k: -by_pid[k].count):
        label = "%s (pid %d)" % (names.get(pid, "pid %d" % pid), pid)
        profiles.append(by_pid[pid].doc(label, frames))
    for cpu in sorted(by_cpu):
        profiles.append(by_cpu[cpu].doc("cpu %d" % cpu, frames))
    off = collections.defaultdict(list)
    for o in sorted(p.offcpu, key=lambda o: o.tsc):
        off[o.pid].append(o)
    for pid in sorted(off, key=lambda k: -sum(o.off_ns for o in off[k])):
        label = "off-CPU: %s (pid %d)" % (names.get(pid, "pid %d" % pid), pid)
        profiles.append(offcpu_profile(label, off[pid], p, frames))
    return {"$schema": SCHEMA, "name": title, "exporter": "profview", "activeProfileIndex": 0,
            "shared": {"frames": frames.table}, "profiles": profiles}


def event_name(ev):
    i = ev - 256
    return SW_EVENTS[i] if 0 <= i < len(SW_EVENTS) else "event %d" % ev


def _us(p, tsc):
    return p.ns(tsc) / 1000.0


def chrome_trace(p):
    """Chrome trace events of the export's context switches: per CPU, what
    ran between one switch and the next, and the counters at each switch."""
    names = {pid: name for pid, name, _, _ in p.images if pid}
    names[0] = "idle"
    events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "CPUs"}}]
    for cpu in sorted({c[0] for c in p.cswitches}):
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": cpu, "args": {"name": "cpu %d" % cpu}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": cpu, "args": {"sort_index": cpu}})
    prev = {}
    for cpu, tsc, old, new, values in sorted(p.cswitches, key=lambda c: c[1]):
        before = prev.get(cpu)
        if before is not None:
            delta = {event_name(e): v - dict(before[1]).get(e, v) for e, v in values}
            events.append({"name": "%s (pid %d)" % (names.get(old, "pid"), old), "cat": "cswitch", "ph": "X",
                           "pid": 1, "tid": cpu, "ts": _us(p, before[0]), "dur": _us(p, tsc) - _us(p, before[0]),
                           "args": dict(delta, pid=old)})
        prev[cpu] = (tsc, values)
        events.append({"name": "cpu %d counters" % cpu, "ph": "C", "pid": 1, "tid": cpu, "ts": _us(p, tsc),
                       "args": {event_name(e): v for e, v in values}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}
