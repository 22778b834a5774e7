"""The emulator and the icount CPU model for the Python scripts, read from
scripts/qemu.sh (the one place they are defined, with the reason)."""
import os
import re
import shlex

_HERE = os.path.dirname(os.path.abspath(__file__))


def _defaults():
    values = {}
    with open(os.path.join(_HERE, "qemu.sh")) as f:
        for line in f:
            m = re.match(r'^([A-Z_]+)="(.*)"$', line.strip())
            if m:
                values[m.group(1)] = re.sub(r"\$([A-Z_]+)", lambda v: values.get(v.group(1), ""), m.group(2))
    return values


_V = _defaults()
QEMU = os.environ.get("QEMU") or "qemu-system-x86_64"
ICOUNT_CPU = shlex.split(_V["ICOUNT_CPU"])
ICOUNT_ARGS = shlex.split(_V["ICOUNT_ARGS"])
HOST_DEVICE = shlex.split(_V["HOST_DEVICE"])


def host_recording(path, append=False):
    """The QEMU options of the host's recording file PATH (scripts/qemu.sh: HOST_DEVICE)."""
    path = path.replace(",", ",,")  # QEMU's option syntax doubles a comma in a value
    return HOST_DEVICE + ["-chardev", "file,id=recording,path=%s%s" % (path, ",append=on" if append else "")]
