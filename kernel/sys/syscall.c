// The system-call table and the path from syscall_entry to a handler.
#include "sys/syscall.h"

#include "arch/x86/cpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/user_time.h"
#include "arch/x86/trap.h"

#include "core/grace.h"
#include "core/handle.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/swevent.h"
#include "core/uaccess.h"

#include "pmc/hwpmc/loggers.h"

struct syscall_entry_info {
    syscall_fn fn;
    unsigned nargs;
    const char *name;
};

static const struct syscall_entry_info table[SYSCALL_COUNT] = {
#define SYSCALL_TABLE(num, name, n) [num] = {do_##name, n, #name},
    SYSCALL_LIST(SYSCALL_TABLE)
#undef SYSCALL_TABLE
};

#define MAX_SYSCALL_ARGS 10

// Calls and failed calls (an NTSTATUS that is not NT_SUCCESS) of each system
// call, per CPU: counted with interrupts off, so without atomics.
static struct {
    uint64_t calls, failed;
} counts[MAX_CPUS][SYSCALL_COUNT];

void syscall_counts(unsigned nr, uint64_t *calls, uint64_t *failed)
{
    *calls = *failed = 0;
    for (unsigned c = 0; c < ncpus && nr < SYSCALL_COUNT; c++) {
        *calls += READ_ONCE(counts[c][nr].calls);
        *failed += READ_ONCE(counts[c][nr].failed);
    }
}

NTSTATUS sys_object(uint64_t handle, int type, struct object **out)
{
    return handle_lookup(&process_current()->handles, (HANDLE)handle, (enum object_type)type, out);
}

NTSTATUS sys_process(uint64_t handle, struct process **out)
{
    struct object *o;
    NTSTATUS s = sys_object(handle, OBJ_PROCESS, &o);
    if (NT_SUCCESS(s))
        *out = (struct process *)o; // the object is the process's first member
    return s;
}

void syscall_dispatch(struct trapframe *tf)
{
    user_time_enter(); // task-clock:u stops here and restarts at the return
    swevent_count(PMC_SW_SYSCALLS);
    uint64_t n = tf->rax;
    uint32_t pid = process_current()->pid;
    pmc_hook(HOOK_SYSCALL_ENTER, pid, (uint32_t)n); // the trace loggers' hooks
    if (n < SYSCALL_COUNT)
        counts[cpu_id()][n].calls++;
    sti();
    uint64_t result;
    if (n >= SYSCALL_COUNT || !table[n].fn) {
        result = (uint64_t)(uint32_t)STATUS_INVALID_SYSTEM_SERVICE;
    } else {
        uint64_t a[MAX_SYSCALL_ARGS] = {tf->rdi, tf->rsi, tf->rdx, tf->r10, tf->r8, tf->r9};
        NTSTATUS s = STATUS_SUCCESS;
        if (table[n].nargs > 6) // the rest sit above the return address on the user stack
            s = copy_from_user(&a[6], tf->rsp + 8, (table[n].nargs - 6) * sizeof(uint64_t));
        result = NT_SUCCESS(s) ? table[n].fn(a, tf) : (uint64_t)(uint32_t)s;
    }
    tf->rax = result;
    grace_poll(); // deferred frees whose grace period has ended, while interrupts are on
    cli();
    if (n < SYSCALL_COUNT && !NT_SUCCESS((NTSTATUS)result))
        counts[cpu_id()][n].failed++; // a status: the calls that return one give 32 bits
    pmc_hook(HOOK_SYSCALL_EXIT, pid, (uint32_t)n);
    trap_return_to_user();
    user_time_leave();
}

extern void syscall_entry(void);

void syscall_init_cpu(void)
{
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
    // syscall: CS = STAR[47:32], SS = +8; sysret: SS = STAR[63:48] + 8, CS = +16.
    wrmsr(MSR_STAR, ((uint64_t)(SEL_UDATA - 8 - 3) << 48) | ((uint64_t)SEL_KCODE << 32));
    wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
    // Clear TF, IF, DF, IOPL, NT and AC on entry.
    wrmsr(MSR_FMASK, 0x47700);
}
