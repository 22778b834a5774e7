// Virtio's legacy PCI interface and split virtqueues (virtio.h). The
// legacy interface is the simplest a transitional device offers: QEMU
// gives it to virtio PCI devices on a conventional PCI bus, which the pc
// machine's bus and q35's root bus (pcie.0) are, from QEMU 2.x to 10.
#include "dev/virtio.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "core/pmm.h"
#include "lib/memlayout.h"
#include "lib/string.h"

// The legacy header at the start of I/O BAR 0, without MSI-X (4.1.4.8).
#define REG_DEVICE_FEATURES 0x00 // 32 bits
#define REG_DRIVER_FEATURES 0x04 // 32 bits
#define REG_QUEUE_PFN       0x08 // 32 bits: the queue's physical address / 4096
#define REG_QUEUE_SIZE      0x0C // 16 bits
#define REG_QUEUE_SELECT    0x0E // 16 bits
#define REG_QUEUE_NOTIFY    0x10 // 16 bits
#define REG_DEVICE_STATUS   0x12 // 8 bits

// Device status bits (2.1).
#define STATUS_ACKNOWLEDGE 1
#define STATUS_DRIVER      2
#define STATUS_DRIVER_OK   4

#define LEGACY_ALIGN 4096 // the used ring's alignment in the legacy layout (2.7.2)

// The rings' entries (2.7.5, 2.7.6, 2.7.8).
struct virtq_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags, next;
};
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1 // this driver polls the used ring (2.7.7)
struct virtq_avail {
    uint16_t flags, idx;
    uint16_t ring[];
};
struct virtq_used {
    uint16_t flags, idx;
    struct {
        uint32_t id, len;
    } ring[];
};

void virtio_legacy_begin(uint16_t io, uint32_t features)
{
    outb(io + REG_DEVICE_STATUS, 0); // reset (3.1.2)
    outb(io + REG_DEVICE_STATUS, STATUS_ACKNOWLEDGE);
    outb(io + REG_DEVICE_STATUS, STATUS_ACKNOWLEDGE | STATUS_DRIVER);
    uint32_t offered = inl(io + REG_DEVICE_FEATURES);
    outl(io + REG_DRIVER_FEATURES, offered & features);
}

// Bytes of a legacy queue of `size` entries: the descriptors and the
// available ring, then the used ring at the next 4096-byte boundary (2.7.2).
static size_t used_offset(uint16_t size)
{
    size_t head = 16u * size + 6 + 2u * size;
    return (head + LEGACY_ALIGN - 1) & ~(size_t)(LEGACY_ALIGN - 1);
}

int virtio_legacy_queue(uint16_t io, uint16_t index, struct virtq *q)
{
    outw(io + REG_QUEUE_SELECT, index);
    uint16_t size = inw(io + REG_QUEUE_SIZE);
    if (size == 0)
        return -1; // no such queue
    size_t bytes = used_offset(size) + 6 + 8u * size;
    size_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
    uint64_t pa = pmm_alloc_pages(pages);
    if (pa == 0 || (pa >> 12) > 0xFFFFFFFFu)
        return -1;
    uint8_t *va = phys_to_virt(pa);
    memset(va, 0, pages * PAGE_SIZE);
    *q = (struct virtq){
        .index = index,
        .size = size,
        .desc = (struct virtq_desc *)va,
        .avail = (struct virtq_avail *)(va + 16u * size),
        .used = (volatile struct virtq_used *)(va + used_offset(size)),
    };
    q->avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
    outl(io + REG_QUEUE_PFN, (uint32_t)(pa >> 12));
    return 0;
}

void virtio_legacy_ready(uint16_t io)
{
    outb(io + REG_DEVICE_STATUS, STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_DRIVER_OK);
}

// Descriptor 0 always: one buffer is in flight at a time. The available
// ring's entry and the descriptor are visible before its index (2.7.13:
// a write barrier; x86 stores are ordered, so the compiler's is enough),
// and the index before the notification (a full barrier, 2.7.13.4).
NTSTATUS virtq_send(uint16_t io, struct virtq *q, uint64_t pa, uint32_t len, uint64_t timeout_ns)
{
    q->desc[0] = (struct virtq_desc){pa, len, 0, 0};
    q->avail->ring[q->avail_idx % q->size] = 0;
    __atomic_signal_fence(__ATOMIC_RELEASE);
    q->avail_idx++;
    __atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    outw(io + REG_QUEUE_NOTIFY, q->index);
    uint64_t start = clock_ns();
    while (__atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE) != q->avail_idx) {
        if (clock_ns() - start > timeout_ns)
            return STATUS_IO_TIMEOUT;
        cpu_relax();
    }
    return STATUS_SUCCESS;
}
