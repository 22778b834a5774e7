#!/usr/bin/env python3
"""gmon-extract.py LOG OUTDIR: save the gmon.out files framed in a console log.

`profile run -g` prints each histogram between two marker lines:

    gmon: begin NAME BYTES
    gmon: <base64>            (any number of lines)
    gmon: end CRC32           (8 hex digits, CRC-32 of the decoded bytes)

Every complete frame whose length and CRC-32 match is written to OUTDIR/NAME
(a later frame of the same name replaces an earlier one). Other lines, such as
kernel messages between frames, are ignored. Prints one line per file; exits 1
when a frame is damaged or none is found.
"""
import base64
import os
import re
import sys
import zlib

BEGIN = re.compile(r"gmon: begin ([A-Za-z0-9._-]+) (\d+)$")
DATA = re.compile(r"gmon: ([A-Za-z0-9+/=]+)$")
END = re.compile(r"gmon: end ([0-9a-f]{8})$")


def frames(lines):
    """Yields (name, bytes or None, problem) for each frame in the log."""
    name, size, chunks = None, 0, []
    for raw in lines:
        line = raw.rstrip("\r\n")
        m = BEGIN.search(line)
        if m:
            if name is not None:
                yield name, None, "no end line"
            name, size, chunks = m.group(1), int(m.group(2)), []
            continue
        if name is None:
            continue
        m = END.search(line)
        if m:
            data = base64.b64decode("".join(chunks))
            crc = "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)
            if len(data) != size:
                yield name, None, "%d bytes, the frame said %d" % (len(data), size)
            elif crc != m.group(1):
                yield name, None, "CRC-32 %s, the frame said %s" % (crc, m.group(1))
            else:
                yield name, data, None
            name = None
            continue
        m = DATA.search(line)
        if m and not line.startswith("gmon: begin"):
            chunks.append(m.group(1))
    if name is not None:
        yield name, None, "no end line"


def main():
    if len(sys.argv) != 3:
        print("usage: gmon-extract.py LOG OUTDIR", file=sys.stderr)
        return 2
    log, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    found, bad = 0, 0
    with open(log, encoding="utf-8", errors="replace") as f:
        for name, data, problem in frames(f):
            if data is None:
                print("gmon-extract: %s: damaged frame: %s" % (name, problem), file=sys.stderr)
                bad += 1
                continue
            path = os.path.join(outdir, name)
            with open(path, "wb") as out:
                out.write(data)
            print("gmon-extract: %s (%d bytes)" % (path, len(data)))
            found += 1
    if found == 0 and bad == 0:
        print("gmon-extract: no gmon frame in %s" % log, file=sys.stderr)
    return 1 if bad or not found else 0


if __name__ == "__main__":
    sys.exit(main())
