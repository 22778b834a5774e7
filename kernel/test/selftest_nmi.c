// test=nmi: the NMI entry (arch/x86/nmi.h). An NMI handler that takes
// page faults (each covered by a fault fixup) and sends itself
// a second NMI while still running: the second one must wait for the first
// one's end (no nesting on the IST stack), and CR2 must be what it was.
#include "lib/kprintf.h"

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/nmi.h"
#include "arch/x86/percpu.h"

#include "core/uaccess.h"

#include "test/selftest.h"

static volatile unsigned test_nmis;    // the test handler's calls
static volatile unsigned seen_inside;  // test_nmis seen at the end of the first call
static volatile bool faults_survived;  // both exceptions came back to the handler
static volatile bool test_armed;       // the handler claims NMIs only while set
static volatile bool fault_and_resend; // the first call faults and sends a second NMI

static bool test_nmi_handler(const struct intr_frame *f)
{
    (void)f;
    if (!test_armed)
        return false;
    unsigned n = ++test_nmis;
    if (n == 1 && fault_and_resend) {
        uint8_t byte;
        // Two page faults (an unmapped user page), each ending in a fixup:
        // neither may unblock NMIs. (TCG reads unknown MSRs as 0, no #GP.)
        bool pf1 = copy_from_user(&byte, 0x7ff000000000ull, 1) != STATUS_SUCCESS;
        bool pf2 = copy_from_user(&byte, 0x7ff000001000ull, 1) != STATUS_SUCCESS;
        faults_survived = pf1 && pf2;
        lapic_send_nmi_self();
        for (unsigned i = 0; i < 2000000 && test_nmis == 1; i++)
            cpu_relax();
        seen_inside = test_nmis;
    }
    return true;
}

static bool wait_nmis(unsigned want)
{
    for (unsigned i = 0; i < 50000000 && test_nmis < want; i++)
        cpu_relax();
    return test_nmis >= want;
}

void selftest_nmi(void)
{
    kprintf("KTAP version 1\n1..4\n");
    nmi_register(test_nmi_handler);
    test_armed = true;
    lapic_send_nmi_self();
    check(wait_nmis(1), "a self-NMI reaches its registered handler");

    test_nmis = 0;
    fault_and_resend = true;
    uint64_t cr2 = 0xc2c2c2c2000ull;
    write_cr2(cr2);
    lapic_send_nmi_self();
    bool second = wait_nmis(2);
    uint64_t cr2_after = read_cr2();
    fault_and_resend = false;
    kprintf("# faults survived %d, second NMI %d, NMIs seen inside the first %u\n", faults_survived,
            second, seen_inside);
    check(faults_survived && second && seen_inside == 1,
          "an NMI sent while one runs (after two page faults in it) waits for its end");
    struct nmi_stats s;
    nmi_stats_read(cpu_id(), &s);
    check(s.nested == 0, "no NMI entered while another ran on its CPU");
    kprintf("# cr2 %lx after the NMIs (written %lx); NMIs %lu, nested %lu\n",
            (unsigned long)cr2_after, (unsigned long)cr2, (unsigned long)s.taken,
            (unsigned long)s.nested);
    check(cr2_after == cr2, "CR2 is kept across an NMI that took a page fault");
    test_armed = false;
}
