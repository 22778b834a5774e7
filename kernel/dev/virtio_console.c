// The virtio console's transmit queue as a pipe to a host file (Virtio 1.2,
// 5.3 "Console Device"). Without VIRTIO_CONSOLE_F_MULTIPORT the device has
// one port, port 0, on queues 0 (receiveq) and 1 (transmitq) (5.3.2); QEMU
// opens that port for a guest that did not ask for multiport once it is
// DRIVER_OK (hw/char/virtio-serial-bus.c, set_status), and its virtconsole
// writes what the port receives to its chardev (hw/char/virtio-console.c,
// flush_buf): with `-chardev file,...` the file grows as the guest writes.
//
// Each write is copied into one physically contiguous bounce buffer and
// handed over as one descriptor: QEMU copies it out of guest memory with
// memcpy, so a buffer costs one notification however long it is, where the
// serial line costs two port accesses a byte.
#include "dev/virtio_console.h"

#include "arch/x86/cpu.h"
#include "core/mutex.h"
#include "core/pmm.h"
#include "core/uaccess.h"
#include "dev/pci.h"
#include "dev/virtio.h"
#include "lib/kprintf.h"
#include "lib/memlayout.h"

// The transitional console's PCI device ID (Virtio 1.2, 4.1.2.1: 0x1000 plus
// the device type minus one; the console is type 3, 5.3.1).
#define VIRTIO_CONSOLE_PCI_DEVICE 0x1003
#define TRANSMITQ                 1
#define BOUNCE_PAGES              64 // 256 KiB a notification
// A host that took no buffer for this long is gone (or its disk is stuck).
#define SEND_TIMEOUT_NS           (5ull * 1000000000)

static struct {
    uint16_t io;
    bool present, failed;
    struct virtq tx;
    uint64_t bounce_pa;
    uint8_t *bounce;
    struct mutex lock; // one writer at a time: the queue has one descriptor
} con = {.lock = MUTEX_INIT("virtio console")};

// Finds the device and its I/O BAR: 0, or -1 (and why) when absent.
static int find_device(struct pci_function *f)
{
    if (pci_find(VIRTIO_PCI_VENDOR, VIRTIO_CONSOLE_PCI_DEVICE, f) < 0) {
        kprintf("host: no virtio console: recordings stay in /tmp and leave by the serial "
                "console (`make run` adds one)\n");
        return -1;
    }
    if (!(f->bar[0] & 1)) { // bit 0 set: an I/O BAR (PCI 3.0, 6.2.5.1)
        kprintf("host: the virtio console at %02x:%02x.%u has no legacy I/O BAR "
                "(disable-legacy=on?): not used\n",
                f->bus, f->slot, f->func);
        return -1;
    }
    return 0;
}

void virtio_console_init(void)
{
    struct pci_function f;
    if (find_device(&f) < 0)
        return;
    pci_enable_io_and_dma(&f);
    con.io = (uint16_t)(f.bar[0] & ~3u);
    virtio_legacy_begin(con.io, 0); // no multiport, no other feature
    con.bounce_pa = pmm_alloc_pages(BOUNCE_PAGES);
    if (con.bounce_pa == 0 || virtio_legacy_queue(con.io, TRANSMITQ, &con.tx) < 0) {
        kprintf("host: virtio console at %02x:%02x.%u: no memory for its queue\n", f.bus, f.slot,
                f.func);
        return;
    }
    con.bounce = phys_to_virt(con.bounce_pa);
    virtio_legacy_ready(con.io);
    con.present = true;
    kprintf("host: virtio console at %02x:%02x.%u, I/O port %#x: `profile record --host` "
            "writes to the host's file\n",
            f.bus, f.slot, f.func, con.io);
}

bool virtio_console_present(void)
{
    return con.present;
}

// One bounce buffer's worth at a time, each taken whole before the next.
static NTSTATUS write_locked(uint64_t usrc, size_t len, size_t *done)
{
    while (*done < len) {
        size_t n = MIN(len - *done, (size_t)BOUNCE_PAGES * PAGE_SIZE);
        NTSTATUS s = copy_from_user(con.bounce, usrc + *done, n);
        if (!NT_SUCCESS(s))
            return s;
        s = virtq_send(con.io, &con.tx, con.bounce_pa, (uint32_t)n, SEND_TIMEOUT_NS);
        if (!NT_SUCCESS(s)) {
            con.failed = true; // the descriptor may still be the device's
            kprintf("host: the virtio console took no data for 5 s: writes to the host end\n");
            return s;
        }
        *done += n;
    }
    return STATUS_SUCCESS;
}

NTSTATUS virtio_console_write(uint64_t usrc, size_t len, size_t *done)
{
    *done = 0;
    if (!con.present)
        return STATUS_NO_SUCH_DEVICE;
    mutex_lock(&con.lock);
    NTSTATUS s = con.failed ? STATUS_IO_TIMEOUT : write_locked(usrc, len, done);
    mutex_unlock(&con.lock);
    return s;
}
