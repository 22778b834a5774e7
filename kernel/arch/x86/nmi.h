// The non-maskable interrupt: its own entry (vectors.asm, nmi_entry) on its own
// IST stack, and one dispatcher that tells apart what an NMI may mean here.
//
// An NMI arrives with interrupts off or on, in any kernel code, even between
// a swapgs and the iretq after it, so the entry reads MSR_GS_BASE to know
// whose GS is loaded (as Linux's paranoid entry does,
// arch/x86/entry/entry_64.S). The CPU blocks further NMIs from the delivery
// of one until the next IRET (Intel SDM vol. 3A §6.7.1): any IRET, also the
// one ending an exception taken inside the NMI handler (a page fault the
// call-chain walker takes and its fixup covers). A second NMI would then land
// on the same IST stack and overwrite the first one's frame. Linux copies the
// frame and lets the nested NMI make the outer one repeat (entry_64.S,
// "nested NMI"); here no IRET ever runs inside an NMI: an exception that
// interrupted NMI context returns with popfq and ret (vectors.asm,
// trap_return), so NMIs stay blocked until the NMI's own final iretq and a
// second one is latched by the CPU and taken right after it, on an empty
// stack. An NMI arriving during that final iretq is the next one, not a nested
// one: the iretq unblocks NMIs only when it completes.
//
// CR2 is kept across the handlers: an NMI that lands in a page-fault handler
// before it read CR2, and itself takes a page fault, would give it the wrong
// address (Linux's arch/x86/kernel/nmi.c does the same).
#pragma once
#include "lib/types.h"

#include "arch/x86/trapframe.h"

// A handler of one NMI source: called on every NMI of its CPU, in
// registration order, with interrupts off and NMIs blocked. Must not take
// locks, sleep or allocate. Returns whether the NMI was (also) its.
typedef bool (*nmi_handler_t)(const struct intr_frame *f);

#define NMI_HANDLERS 4

// Add h (at boot, before any NMI it may claim is enabled).
void nmi_register(nmi_handler_t h);

// Called by nmi_entry with the NMI's frame, built in place on its IST stack
// (rbp below the CPU's words, as timer_entry builds it; trapframe.h).
void nmi_dispatch(const struct intr_frame *f);

// Stop every other CPU (panic): NMIs that make them halt. This CPU then
// ignores the NMIs it still receives (a sampling NMI timer keeps running).
void nmi_stop_others(void);

// This CPU's NMIs: taken, claimed by no handler, and entered while another
// NMI of this CPU was still running (never, by the entry's design).
struct nmi_stats {
    uint64_t taken, unclaimed, nested;
};
void nmi_stats_read(unsigned cpu, struct nmi_stats *out);
