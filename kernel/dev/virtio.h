// Virtio over PCI through the legacy (transitional) interface: the
// registers behind I/O BAR 0, and split virtqueues in the legacy layout.
// Virtio 1.2 (OASIS), 4.1.4.8 "Legacy Interfaces: A Note on PCI Device
// Layout", 2.7 "Split Virtqueues" and 2.7.2 "Legacy Interfaces: A Note on
// Virtqueue Layout".
#pragma once
#include "lib/abi/status.h"
#include "lib/types.h"

#define VIRTIO_PCI_VENDOR 0x1AF4 // every virtio PCI device (4.1.2)

// One split virtqueue the driver only adds buffers to the device's side of.
struct virtq {
    uint16_t index, size;
    struct virtq_desc *desc;
    struct virtq_avail *avail;
    volatile struct virtq_used *used;
    uint16_t avail_idx; // the driver's copy of avail->idx
};

// Reset, then ACKNOWLEDGE and DRIVER; the device's features are read and
// `features` (a subset) accepted. The device is then set up but not live.
void virtio_legacy_begin(uint16_t io, uint32_t features);
// Queue `index` of the device at io, in pages from the physical allocator:
// 0, or -1 when the device has no such queue or memory is short.
int virtio_legacy_queue(uint16_t io, uint16_t index, struct virtq *q);
// DRIVER_OK: the device is live.
void virtio_legacy_ready(uint16_t io);
// Hands the device one buffer of len bytes at physical address pa (which it
// reads), notifies it, and waits until it has used it, at most timeout_ns.
// STATUS_SUCCESS, or STATUS_IO_TIMEOUT when the device never did.
NTSTATUS virtq_send(uint16_t io, struct virtq *q, uint64_t pa, uint32_t len, uint64_t timeout_ns);
