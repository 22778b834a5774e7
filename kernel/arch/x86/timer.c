// Per-CPU periodic timers on one LAPIC timer (see timer.h for the contract).
#include "arch/x86/timer.h"

#include "lib/cmdline.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/nmi.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trap.h"
#include "arch/x86/vectors.h"

// A running slot's expiries since its start are (deadline - origin) / period - 1:
// the deadline only ever moves by whole periods, so the interrupt keeps no count.
struct periodic {
    uint64_t deadline; // absolute TSC of the next expiry; UINT64_MAX: stopped
    uint64_t period;   // TSC ticks
    uint64_t origin;   // TSC at the start: the first deadline is origin + period
    uint64_t missed;   // expiries not delivered: the CPU was a period or more late
    uint64_t count;    // expiries, delivered or missed, of a stopped slot
};

struct timer_cpu {
    struct periodic slot[TIMER_SLOTS];
    volatile bool busy;         // a start or stop is changing the slots (NMI mode)
    volatile uint32_t deferred; // slots the NMI found due, for timer_deferred
    struct timer_user {
        timer_fn fn;
        void *arg;
    } user[TIMER_SLOTS];
} __attribute__((aligned(64)));

static struct timer_cpu timers[MAX_CPUS];
static uint64_t lapic_per_tsc; // LAPIC counts per TSC tick, 32.32 fixed point

// How the LAPIC timer is armed and the interrupt acknowledged, chosen once at
// boot (timer_init_cpu): every interrupt then tests one variable, not the timer
// mode and the register interface separately.
static enum timer_mode {
    MODE_XAPIC_ONESHOT,  // registers in MMIO, one-shot count
    MODE_X2APIC_ONESHOT, // registers are MSRs, one-shot count
    MODE_TSC_DEADLINE,   // IA32_TSC_DEADLINE (Intel SDM vol. 3A §11.5.4.1)
} timer_mode;

// The LAPIC count for delta TSC ticks, rounded up: firing early costs an extra
// interrupt, firing late costs accuracy. It fits in the 32-bit initial-count
// register for any delta up to TIMER_PERIOD_MAX_NS (timer_init_cpu checks).
static inline uint32_t lapic_count(uint64_t delta)
{
    return (uint32_t)((((unsigned __int128)delta * lapic_per_tsc) >> 32) + 1);
}

// Arm the LAPIC timer for deadline next (UINT64_MAX: stop it); now is a recent
// TSC reading (a late one only delays the interrupt, never loses it).
static void program(uint64_t next, uint64_t now)
{
    if (timer_mode == MODE_TSC_DEADLINE)
        wrmsr(MSR_IA32_TSC_DEADLINE, next == UINT64_MAX ? 0 : next);
    else if (next == UINT64_MAX)
        lapic_write(LAPIC_TIMER_INIT, 0);
    else
        lapic_write(LAPIC_TIMER_INIT, lapic_count(next > now ? next - now : 0));
}

static inline void eoi_xapic(volatile uint32_t *r)
{
    r[LAPIC_EOI / 4] = 0;
}
static inline void eoi_x2apic(void)
{
    wrmsr(MSR_X2APIC_BASE + (LAPIC_EOI >> 4), 0);
}

// The interrupt's re-arm for next, which is after now by at most a period,
// and its EOI when eoi (a constant wherever this is inlined): with the timer
// mode tested once, the two register writes are adjacent. An NMI takes no EOI
// (Intel SDM vol. 3A, "Signaling Interrupt Servicing Completion": not for
// NMI, SMI, INIT, ExtINT or SIPI delivery).
static inline __attribute__((always_inline)) void rearm(uint64_t next, uint64_t now, bool eoi)
{
    if (__builtin_expect(timer_mode == MODE_XAPIC_ONESHOT, 1)) {
        volatile uint32_t *r = lapic_mmio;
        r[LAPIC_TIMER_INIT / 4] = lapic_count(next - now);
        if (eoi)
            eoi_xapic(r);
    } else if (timer_mode == MODE_X2APIC_ONESHOT) {
        wrmsr(MSR_X2APIC_BASE + (LAPIC_TIMER_INIT >> 4), lapic_count(next - now));
        if (eoi)
            eoi_x2apic();
    } else {
        wrmsr(MSR_IA32_TSC_DEADLINE, next);
        if (eoi)
            lapic_eoi();
    }
}
static inline void rearm_and_eoi(uint64_t next, uint64_t now)
{
    rearm(next, now, true);
}

// The earliest deadline of this CPU's slots (UINT64_MAX: all stopped).
static uint64_t earliest(const struct timer_cpu *t)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        next = MIN(next, t->slot[i].deadline);
    return next;
}

// Expire p at now (its deadline has passed): the deadline moves past now.
// The user is called once per interrupt however late the CPU is: a CPU that
// was stalled (a vCPU the host descheduled, a long interrupts-off section)
// would otherwise replay every period it slept through back to back, and a
// ProfileTime user would see one stall as a burst of samples at one
// instruction. The periods not delivered are counted in missed.
static inline void expire(struct periodic *p, uint64_t now)
{
    p->deadline += p->period;
    // A period or more late: rare. One period at a time, each stored as it
    // goes (the empty asm keeps the compiler from keeping them in registers):
    // the common path then needs no register saved. The loop runs once per
    // period the CPU missed: 8,192 times for a one-second stall at the
    // finest ProfileTime interval, some 30,000 instructions.
    while (__builtin_expect(p->deadline <= now, 0)) {
        p->deadline += p->period;
        p->missed++;
        __asm__ volatile("" ::: "memory");
    }
}

// Call the users of the slots in due, in slot order.
static __attribute__((noinline)) void call_users(const struct timer_cpu *t,
                                                 const struct intr_frame *f, unsigned due)
{
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        if (due & (1u << i))
            t->user[i].fn(f, t->user[i].arg);
}

// The user of an interrupt with no slot due (the count rounds up, so only a
// re-arm racing with a slot's start or stop fires early).
static void no_user(const struct intr_frame *f, void *arg)
{
    UNUSED(f);
    UNUSED(arg);
}
static const struct timer_user nobody = {no_user, NULL};

// Every due slot of t moves past now: the slots that were due, the earliest
// deadline after that in *next, the user of the last due slot in *last (left
// alone when none was due). The loop runs over a constant number of slots and
// unrolls.
static inline __attribute__((always_inline)) unsigned
expire_due(struct timer_cpu *t, uint64_t now, uint64_t *next, const struct timer_user **last)
{
    unsigned due = 0;
    *next = UINT64_MAX;
#pragma GCC unroll 4
    for (unsigned i = 0; i < TIMER_SLOTS; i++) {
        if (t->slot[i].deadline <= now) {
            expire(&t->slot[i], now);
            due |= 1u << i;
            *last = &t->user[i];
        }
        *next = MIN(*next, t->slot[i].deadline);
    }
    return due;
}

// The LAPIC timer's interrupt, entered from timer_entry (vectors.asm) with
// only the CPU's frame: every due deadline moves on, the timer is re-armed for
// the earliest and the interrupt acknowledged (interrupts stay off until the
// iretq, so nothing can nest), then each due slot's user is called once; on
// the way back to ring 3 (timer_entry) the scheduler may preempt or a kill
// take effect.
// A user that starts or stops a slot re-arms the timer itself. A stopped slot
// has the deadline UINT64_MAX, never due, so expire_due needs no active mask.
void timer_interrupt(const struct intr_frame *f)
{
    struct timer_cpu *t = percpu_read(timer);
    uint64_t now = rdtsc(), next;
    const struct timer_user *last = &nobody; // the user of the last due slot
    unsigned due = expire_due(t, now, &next, &last);
    // Some slot is always running here (the scheduler tick never stops), and
    // every deadline moved past now.
    rearm_and_eoi(next, now);
    // Usually one slot is due: its user's call is then this function's last
    // act, a tail call, and nothing here needs saving around it.
    if (due & (due - 1))
        call_users(t, f, due);
    else
        last->fn(f, last->arg);
}

void timer_periodic_start(enum timer_slot slot, uint64_t period_ns, timer_fn fn, void *arg)
{
    assert(slot < TIMER_SLOTS && period_ns >= 1000 && period_ns <= TIMER_PERIOD_MAX_NS &&
           !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    uint64_t now = rdtsc();
    t->busy = true; // an NMI now leaves the slots alone (and this call re-arms)
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    p->count = p->missed = 0;
    t->user[slot] = (struct timer_user){fn, arg};
    p->period = MAX(ns_to_tsc(period_ns), 1ull);
    p->origin = now;
    p->deadline = now + p->period;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = false;
    program(earliest(t), now);
}

// Expiries already due but not yet handled (this CPU was busy with interrupts
// off) are counted as missed, so that every period that passed is accounted.
void timer_periodic_stop(enum timer_slot slot)
{
    assert(slot < TIMER_SLOTS && !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    uint64_t now = rdtsc();
    if (p->deadline == UINT64_MAX)
        return;
    t->busy = true;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t behind = p->deadline <= now ? (now - p->deadline) / p->period + 1 : 0;
    p->missed += behind;
    WRITE_ONCE(p->count, (p->deadline - p->origin) / p->period - 1 + behind);
    __atomic_store_n(&p->deadline, UINT64_MAX, __ATOMIC_RELEASE); // count first
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = false;
    program(earliest(t), now);
}

// Expiries of p so far. Another CPU's reader may meet a start or stop half
// done: it then sees the old run's figures or the new one's, and 0 before the
// first deadline.
static uint64_t expiries(const struct periodic *p)
{
    uint64_t deadline = __atomic_load_n(&p->deadline, __ATOMIC_ACQUIRE);
    if (deadline == UINT64_MAX)
        return READ_ONCE(p->count);
    uint64_t origin = READ_ONCE(p->origin), period = READ_ONCE(p->period);
    return deadline > origin + period ? (deadline - origin) / period - 1 : 0;
}

uint64_t timer_periodic_count(enum timer_slot slot)
{
    return expiries(&timers[cpu_id()].slot[slot]);
}

void timer_periodic_stats(unsigned cpu, enum timer_slot slot, uint64_t *count, uint64_t *missed)
{
    *count = expiries(&timers[cpu].slot[slot]);
    *missed = READ_ONCE(timers[cpu].slot[slot].missed);
}

// --- the LAPIC timer delivered as NMI (timer.h) ------------------------------

const char *timer_nmi_why = "not asked for (boot option profile_nmi=1)";
bool timer_nmi;

// The slots the NMI found due, other than ProfileTime, called here in an
// ordinary interrupt (the scheduler tick may not run in an NMI).
static void timer_deferred(struct trapframe *tf)
{
    struct timer_cpu *t = percpu_read(timer);
    unsigned due = __atomic_exchange_n(&t->deferred, 0, __ATOMIC_RELAXED);
    struct intr_frame f = tf_intr_frame(tf);
    call_users(t, &f, due);
}

// The LAPIC timer's NMI: as timer_interrupt, without an EOI (an NMI has
// none); ProfileTime's user is called here, with the interrupted frame, the
// others through a self-IPI to VEC_NMI_WORK.
static bool timer_nmi_handler(const struct intr_frame *f)
{
    struct timer_cpu *t = percpu_read(timer);
    if (t->busy)
        return true; // the start or stop it interrupted re-arms the timer
    uint64_t now = rdtsc(), next;
    const struct timer_user *last = &nobody;
    unsigned due = expire_due(t, now, &next, &last);
    if (__builtin_expect(!due, 0)) {
        // Another source's NMI, or the timer a little early (its count rounds
        // up): armed again as it was, perhaps for no slot at all.
        program(next, now);
        return false;
    }
    rearm(next, now, false); // a due slot moved on: next is a deadline
    unsigned rest = due & ~(1u << TIMER_SLOT_PROFILE);
    if (rest) {
        __atomic_fetch_or(&t->deferred, rest, __ATOMIC_RELAXED);
        lapic_send_self_ipi_from_nmi(VEC_NMI_WORK);
    }
    if (due & (1u << TIMER_SLOT_PROFILE))
        t->user[TIMER_SLOT_PROFILE].fn(f, t->user[TIMER_SLOT_PROFILE].arg);
    return true;
}

// Whether this machine delivers the LAPIC timer as NMI. The timer's LVT has
// no delivery-mode field on hardware (Intel SDM vol. 3A Figure 10-8: only
// LINT0/1, performance, thermal and CMCI have one), but QEMU's LAPIC honours
// the field on every LVT (hw/intc/apic.c), so under QEMU's TCG it works.
static bool timer_nmi_possible(void)
{
    if (!(cpuid(1, 0).ecx & (1u << 31))) {
        timer_nmi_why = "unavailable: not under a hypervisor (the LAPIC timer LVT has no NMI "
                        "delivery mode on hardware)";
        return false;
    }
    struct cpuid_regs h = cpuid(CPUID_LEAF_HYPERVISOR, 0);
    char id[13];
    memcpy(id, &h.ebx, 4);
    memcpy(id + 4, &h.ecx, 4);
    memcpy(id + 8, &h.edx, 4);
    id[12] = 0;
    if (strcmp(id, "TCGTCGTCGTCG") != 0) {
        timer_nmi_why = "unavailable: only QEMU's TCG delivers the LAPIC timer LVT as NMI";
        return false;
    }
    timer_nmi_why = "LAPIC timer LVT in NMI delivery mode (QEMU TCG honours it; profile_nmi=1)";
    return true;
}

static void timer_nmi_choose(void)
{
    char v[8];
    if (!cmdline_get("profile_nmi", v, sizeof v) || strcmp(v, "1") != 0 || !timer_nmi_possible())
        return;
    irq_register(VEC_NMI_WORK, timer_deferred);
    nmi_register(timer_nmi_handler);
    timer_nmi = true;
}

void timer_init_cpu(void)
{
    struct timer_cpu *t = &timers[cpu_id()];
    this_cpu()->timer = t;
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        t->slot[i].deadline = UINT64_MAX;
    if (cpu_id() == 0) {
        lapic_per_tsc = (lapic_timer_hz << 32) / tsc_hz; // clock.c keeps lapic_timer_hz < 2^32
        if (cpuid(1, 0).ecx & CPUID1_ECX_TSC_DEADLINE)
            timer_mode = MODE_TSC_DEADLINE;
        else
            timer_mode = lapic_x2 ? MODE_X2APIC_ONESHOT : MODE_XAPIC_ONESHOT;
        // The longest delta the interrupt arms, a period, must fit the count.
        uint64_t longest = ns_to_tsc(TIMER_PERIOD_MAX_NS) + 1;
        if (timer_mode != MODE_TSC_DEADLINE &&
            (((unsigned __int128)longest * lapic_per_tsc) >> 32) + 1 > UINT32_MAX)
            panic("timer: the longest period overflows the LAPIC count");
        timer_nmi_choose();
    }
    uint32_t dm = timer_nmi ? LVT_DELIVERY_NMI : 0;
    if (timer_mode == MODE_TSC_DEADLINE) {
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_TSC_DEADLINE | dm | VEC_TIMER);
        __asm__ volatile("mfence" ::: "memory"); // LVT write before the first deadline
    } else {
        lapic_write(LAPIC_TIMER_DIV, 0xB); // divide by 1, as calibrated
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | dm | VEC_TIMER);
    }
}
