// The NMI dispatcher (see nmi.h).
#include "arch/x86/nmi.h"

#include "lib/param.h"

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"

static nmi_handler_t handlers[NMI_HANDLERS];
static unsigned nhandlers;
static volatile int stopping_cpu = -1; // the CPU that asked the others to stop (panic)
static struct nmi_stats stats[MAX_CPUS];

void nmi_register(nmi_handler_t h)
{
    if (nhandlers < NMI_HANDLERS)
        __atomic_store_n(&handlers[nhandlers++], h, __ATOMIC_RELEASE);
}

void nmi_stop_others(void)
{
    __atomic_store_n(&stopping_cpu, (int)cpu_id(), __ATOMIC_SEQ_CST);
    lapic_send_nmi_all_but_self();
}

// The NMIs of one CPU never nest (nmi.h), so depth is 0 or 1 here unless
// that design is broken: counted in nested, the self-test checks it stays 0.
// Every sample taken by NMI passes here, so the handlers' loop keeps little
// alive across its calls (the frame, the slot, the verdict; CR2 on the stack):
// fewer registers to save and restore.
void nmi_dispatch(const struct intr_frame *f)
{
    struct cpu *c = this_cpu();
    int stopper = __atomic_load_n(&stopping_cpu, __ATOMIC_ACQUIRE);
    if (stopper >= 0) { // a panic: every CPU but the panicking one stops here
        if (stopper != (int)c->id)
            halt_forever();
        return;
    }
    struct nmi_stats *s = &stats[c->id];
    s->taken++;
    if (c->nmi_depth++)
        s->nested++;
    uint64_t cr2 = read_cr2();
    bool claimed = false;
    for (unsigned i = 0; i < __atomic_load_n(&nhandlers, __ATOMIC_ACQUIRE); i++)
        claimed |= handlers[i](f);
    c = this_cpu();
    if (!claimed)
        stats[c->id].unclaimed++;
    if (read_cr2() != cr2)
        write_cr2(cr2);
    c->nmi_depth--;
}

void nmi_stats_read(unsigned cpu, struct nmi_stats *out)
{
    *out = stats[cpu];
}
