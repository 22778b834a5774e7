#!/usr/bin/env python3
"""Extract the CPUID fixtures of tests/fixtures/cpuid/ from a checkout of the
public repository InstLatx64/InstLatx64 (https://github.com/InstLatx64/InstLatx64),
which holds AIDA64 CPUID dumps of real processors.

Usage: scripts/cpuid-fixtures.py CHECKOUT [OUTDIR]   (OUTDIR: tests/fixtures/cpuid)

For every *_CPUID*.txt dump of an x86-64 processor (CPUID 80000001H EDX bit 29,
long mode), the first logical CPU's lines of the leaves the PMU code reads are
copied verbatim into OUTDIR/<vendor folder>/<file name> (spaces become '_'),
under a header naming the source file and the commit. Only those leaves are
kept: 0, 1, 7 (hybrid flag), 0AH (Intel architectural performance
monitoring), 1AH and 23H (hybrid core types and their counters), 40000000H
(hypervisor), 80000000H, 80000001H (AMD PerfCtrExtCore) and 80000022H (AMD
PerfMonV2).

The dumps come in three layouts, all kept as they are:
  "------[ Logical CPU #0 ]------" then "CPUID 0000000A: EAX-EBX-ECX-EDX [...]";
  "CPUID Registers (CPU #1):" then "CPUID 0000000A  <tab>EAX-EBX-ECX-EDX";
  bare "CPUID 0000000A EAX-EBX-ECX-EDX" or "CPUID 0000000A: EAX EBX ECX EDX" lines.
The first CPU block of a dump is its logical CPU #0, whatever number it has;
without headers, a CPU block ends where leaf 0 comes again.
"""
import os
import re
import subprocess
import sys

LEAVES = {0x0, 0x1, 0x7, 0xA, 0x1A, 0x23, 0x40000000, 0x80000000, 0x80000001, 0x80000022}
LINE = re.compile(r'^CPUID\s+([0-9A-Fa-f]{8})\s*:?\s*([0-9A-Fa-f]{8})[- ]([0-9A-Fa-f]{8})'
                  r'[- ]([0-9A-Fa-f]{8})[- ]([0-9A-Fa-f]{8})')
HEADER = re.compile(r'Logical CPU #\d+|CPUID Registers \(CPU #\d+')


def first_cpu(text):
    """The header line (or None) and the CPUID lines of the first CPU block."""
    header, lines, blocks = None, [], 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if HEADER.search(line):
            blocks += 1
            if blocks > 1:
                break
            header = line
            continue
        m = LINE.match(line)
        if m and int(m.group(1), 16) == 0 and any(int(LINE.match(l).group(1), 16) == 0
                                                  for l in lines):
            break  # headerless dumps: the next CPU starts with leaf 0 again
        if m:
            lines.append(line)
    return header, lines


def regs(lines, leaf):
    for line in lines:
        m = LINE.match(line)
        if int(m.group(1), 16) == leaf:
            return [int(m.group(i), 16) for i in range(2, 6)]
    return None


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else 'tests/fixtures/cpuid'
    commit = subprocess.run(['git', '-C', src, 'rev-parse', 'HEAD'], capture_output=True,
                            text=True, check=True).stdout.strip()
    files = subprocess.run(['git', '-C', src, 'ls-files'], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    kept = 0
    for path in sorted(f for f in files if re.search(r'_CPUID\d*\.txt$', f) and '/' in f):
        with open(os.path.join(src, path), encoding='latin-1') as f:
            header, lines = first_cpu(f.read())
        ext = regs(lines, 0x80000001)
        if regs(lines, 0) is None or ext is None or not (ext[3] >> 29) & 1:
            continue  # not an x86-64 processor (or no leaf 0 to tell)
        keep = [l for l in lines if int(LINE.match(l).group(1), 16) in LEAVES]
        folder, name = path.split('/', 1)
        dest = os.path.join(out, folder.replace(' ', '_'), name.replace(' ', '_'))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, 'w') as f:
            f.write(f'# Source: https://github.com/InstLatx64/InstLatx64 at {commit}, {path}\n')
            f.write('# The first logical CPU\'s leaves 0, 1, 7, 0AH, 1AH, 23H, 40000000H, '
                    '80000000H, 80000001H and 80000022H, as dumped there (AIDA64).\n')
            if header:
                f.write(header + '\n')
            f.write('\n'.join(keep) + '\n')
        kept += 1
    print(f'{kept} x86-64 dumps written under {out}')


if __name__ == '__main__':
    main()
