#!/usr/bin/env python3
"""Extract tests/fixtures/perfmon/core-events.txt from a checkout of Intel's
public event tables, https://github.com/intel/perfmon.

Usage: scripts/perfmon-fixtures.py CHECKOUT [OUT]   (OUT: tests/fixtures/perfmon/core-events.txt)

From every <ARCH>/events/*_core.json, the rows of the event encodings the
kernel programs or reasons about -- the architectural events' event select /
unit mask pairs 3CH/00H, C0H/00H, 3CH/01H, 2EH/4FH, 2EH/41H, C4H/00H, C5H/00H
(Intel SDM vol. 3B, "Pre-defined Architectural Performance Events") -- and
every fixed-counter row, one line each:

    <file> <EventCode> <UMask> <EventName> <Counter>

codes as two hex digits, Counter with spaces removed ("0,1,2,3",
"Fixed_counter_2"). tests/pmc/test_source.c checks kernel/pmc/hal/profile_source.c
against it.
"""
import json
import os
import subprocess
import sys

WANT = {(0x3C, 0x00), (0xC0, 0x00), (0x3C, 0x01), (0x2E, 0x4F), (0x2E, 0x41), (0xC4, 0x00),
        (0xC5, 0x00)}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else 'tests/fixtures/perfmon/core-events.txt'
    commit = subprocess.run(['git', '-C', src, 'rev-parse', 'HEAD'], capture_output=True,
                            text=True, check=True).stdout.strip()
    files = subprocess.run(['git', '-C', src, 'ls-files'], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    rows = []
    for path in sorted(f for f in files if f.endswith('_core.json') and '/events/' in f
                       and not f.startswith('scripts/')):
        with open(os.path.join(src, path)) as f:
            events = json.load(f)['Events']
        for e in events:
            code = int(e['EventCode'].split(',')[0], 16)
            umask = int(e['UMask'].split(',')[0], 16)
            counter = e.get('Counter', '').replace(' ', '_')
            if (code, umask) in WANT or counter.lower().startswith('fixed'):
                rows.append(f'{path} {code:02X} {umask:02X} {e["EventName"]} {counter}')
    with open(out, 'w') as f:
        f.write(f'# Source: https://github.com/intel/perfmon at {commit}: <ARCH>/events/*_core.json\n')
        f.write('# <file> <EventCode> <UMask> <EventName> <Counter>, extracted by '
                'scripts/perfmon-fixtures.py\n')
        f.write('\n'.join(rows) + '\n')
    print(f'{len(rows)} rows from {len(set(r.split()[0] for r in rows))} tables into {out}')


if __name__ == '__main__':
    main()
