"""The header features of a perf.data file: the sections after the data that
`perf report --header` prints and hotspot's parser reads (the feature bits
of tools/perf/util/header.h; each section's layout as header.c's write_*
functions write it; KDAB/perfparser reads them in app/perffeatures.cpp).

Written: BUILD_ID, HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC,
CPUID, CMDLINE, EVENT_DESC and PMU_MAPPINGS. Left out, because the recording
does not say them: TOTAL_MEM, CPU_TOPOLOGY, NUMA_TOPOLOGY, CACHE and
MEM_TOPOLOGY; and SAMPLE_TIME, which hotspot's parser (1.3.0) does not read
("feature not properly read").
"""
import struct

BUILD_ID, HOSTNAME, OSRELEASE, VERSION, ARCH = 2, 3, 4, 5, 6
NRCPUS, CPUDESC, CPUID, CMDLINE, EVENT_DESC = 7, 8, 9, 11, 12
PMU_MAPPINGS = 16

NAME_ALIGN = 64  # header.c pads strings and build-id file names to 64 bytes
MISC_KERNEL, MISC_USER = 1, 2
MISC_BUILD_ID_SIZE = 1 << 15  # the build-id entry says how long its id is
HOST_PID = 0xFFFFFFFF  # -1: the host machine's DSOs (perf's HOST_KERNEL_ID)


def string(text):
    """do_write_string: u32 length, then the string NUL-padded to 64 bytes."""
    raw = text.encode("utf-8") + b"\0"
    raw += b"\0" * (-len(raw) % NAME_ALIGN)
    return struct.pack("<I", len(raw)) + raw


def build_id_entry(build_id, name, kernel):
    """struct perf_record_header_build_id: header, pid, the id in 24 bytes
    (the size in byte 20), the DSO's name padded to 64."""
    raw = name.encode("utf-8") + b"\0"
    raw += b"\0" * (-len(raw) % NAME_ALIGN)
    body = struct.pack("<I", HOST_PID) + build_id.ljust(20, b"\0") + struct.pack("<BBH", len(build_id), 0, 0)
    misc = (MISC_KERNEL if kernel else MISC_USER) | MISC_BUILD_ID_SIZE
    return struct.pack("<IHH", 0, misc, 8 + len(body) + len(raw)) + body + raw


def event_desc(events):
    """EVENT_DESC: the number of events, the attribute size, then each
    event's attribute, number of ids, name and ids."""
    attrs = [e.attr() for e in events]
    out = struct.pack("<II", len(events), len(attrs[0]) if attrs else 0)
    for e, attr in zip(events, attrs):
        out += attr + struct.pack("<I", len(e.ids)) + string(e.name)
        out += struct.pack("<%dQ" % len(e.ids), *e.ids)
    return out


def cmdline(words):
    return struct.pack("<I", len(words)) + b"".join(string(w) for w in words)


def pmu_mappings(pmus):
    """PMU_MAPPINGS: {name: type} as (u32 type, name) pairs."""
    out = struct.pack("<I", len(pmus))
    for name, ptype in sorted(pmus.items(), key=lambda kv: kv[1]):
        out += struct.pack("<I", ptype) + string(name)
    return out


def sections(info, events, build_ids):
    """{feature bit: section bytes} for a recording described by INFO (host,
    release, version, arch, ncpus, cpudesc, cpuid, cmdline), its EVENTS and
    its BUILD_IDS [(build-id, DSO name, is the kernel)]."""
    out = {
        HOSTNAME: string(info["host"]),
        OSRELEASE: string(info["release"]),
        VERSION: string(info["version"]),
        ARCH: string(info["arch"]),
        NRCPUS: struct.pack("<II", info["ncpus"], info["ncpus"]),
        CMDLINE: cmdline(info["cmdline"]),
        EVENT_DESC: event_desc(events),
        PMU_MAPPINGS: pmu_mappings({e.pmu: e.pmu_type for e in events}),
    }
    if info.get("cpudesc"):
        out[CPUDESC] = string(info["cpudesc"])
    if info.get("cpuid"):
        out[CPUID] = string(info["cpuid"])
    if build_ids:
        out[BUILD_ID] = b"".join(build_id_entry(i, name, k) for i, name, k in build_ids)
    return out


def layout(features, offset):
    """The feature bitmap (32 bytes) and what follows the data at OFFSET: an
    {offset, size} per set bit in bit order, then the sections."""
    bits = sorted(features)
    bitmap = sum(1 << b for b in bits)
    table = b""
    body = b""
    at = offset + 16 * len(bits)
    for b in bits:
        table += struct.pack("<QQ", at + len(body), len(features[b]))
        body += features[b]
    return bitmap.to_bytes(32, "little"), table + body
