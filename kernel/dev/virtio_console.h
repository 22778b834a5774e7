// The host's recording file: port 0 of a virtio console device
// (virtio-serial-pci with a virtconsole on a host chardev), written in
// whole buffers. See docs/pmc-log.md, "Recordings on the host".
#pragma once
#include "lib/abi/status.h"
#include "lib/types.h"

// Finds and starts the device; says on the console what it found.
void virtio_console_init(void);
bool virtio_console_present(void);
// Copies len bytes from the user's buffer at usrc to the host, a bounce
// buffer at a time, one writer at a time; *done: the bytes the host took.
// STATUS_NO_SUCH_DEVICE without the device; STATUS_IO_TIMEOUT once it stops
// taking buffers (every later write too); a copy's fault status.
NTSTATUS virtio_console_write(uint64_t usrc, size_t len, size_t *done);
