// The end of every sequence: everything stopped and checked, then closed,
// the children reaped, and no handle left in the table.
#include "fuzz_state.h"

static void stop_everything(struct fuzzer *f)
{
    for (unsigned k = 0; k < NPROF; k++)
        if (f->prof[k].live && f->prof[k].started) {
            check(f, OP_PROF_STOP, NtStopProfile(f->prof[k].h), STATUS_SUCCESS, false);
            f->prof[k].started = false;
        }
    for (unsigned k = 0; k < NPMC; k++)
        if (f->pmc[k].live && f->pmc[k].running) {
            check(f, OP_PMC_STOP, NtPmcStop(f->pmc[k].h), STATUS_SUCCESS, false);
            f->pmc[k].running = false;
        }
}

// Stopped: each profile's buckets add up, each count is where it was or higher.
static void check_everything(struct fuzzer *f)
{
    for (unsigned k = 0; k < NPROF; k++)
        if (f->prof[k].live)
            prof_check_sum(f, k);
    for (unsigned k = 0; k < NPMC; k++) {
        struct pmc_value v;
        if (!f->pmc[k].live || !f->pmc[k].counting)
            continue;
        NTSTATUS s = NtPmcQuery(f->pmc[k].h, &v);
        check(f, OP_PMC_QUERY, s, STATUS_SUCCESS, false);
        if (NT_SUCCESS(s))
            pmc_check_value(f, k, v.value, v.time_enabled);
    }
}

static void close_everything(struct fuzzer *f)
{
    for (unsigned k = 0; k < NPROF; k++)
        if (f->prof[k].live)
            prof_close(f, k);
    for (unsigned k = 0; k < NPMC; k++)
        if (f->pmc[k].live)
            pmc_close(f, k);
    for (unsigned k = 0; k < NPROC; k++)
        if (f->proc[k].live)
            proc_reap(f, k);
    self_close(f);
}

// Every handle value this sequence may have used names nothing now.
static void sweep(struct fuzzer *f)
{
    for (uint64_t v = 4; v <= f->max_handle; v += 4) {
        uint32_t pid;
        NTSTATUS s = SysProcessId((HANDLE)(uintptr_t)v, &pid);
        if (s != STATUS_INVALID_HANDLE)
            fuzz_fail(f, FAIL_HANDLE, "handle %#lx still names something after the teardown (%s)",
                      v, nt_status_name(s));
    }
    f->max_handle = 0;
}

void teardown(struct fuzzer *f)
{
    f->tearing = true;
    stop_everything(f);
    check_everything(f);
    log_drain_and_check(f);
    close_everything(f);
    sweep(f);
    for (unsigned k = 0; k < NPROF; k++)
        slot_restore(f, k);
    f->log = (struct logstate){0};
    f->tearing = false;
}
