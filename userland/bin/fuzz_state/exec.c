// The executor's frame: the fuzzer's memory, the statuses each call may give,
// the model's handles, running one sequence.
#include "fuzz_state.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Statuses: what each call may give (kernel/lib/abi/status.h, docs/pmc-log.md,
// docs/profile.md). A list ends with NO_STATUS.

#define HANDLE_ERRORS STATUS_INVALID_HANDLE, STATUS_OBJECT_TYPE_MISMATCH
#define END           NO_STATUS

static const NTSTATUS st_create[] = {STATUS_SUCCESS,
                                     STATUS_INVALID_PARAMETER_7,
                                     STATUS_INVALID_PARAMETER,
                                     STATUS_BUFFER_TOO_SMALL,
                                     STATUS_BUFFER_OVERFLOW,
                                     STATUS_ACCESS_VIOLATION,
                                     STATUS_DATATYPE_MISALIGNMENT,
                                     HANDLE_ERRORS,
                                     STATUS_ACCESS_DENIED,
                                     STATUS_PRIVILEGE_NOT_HELD,
                                     STATUS_NOT_SUPPORTED,
                                     STATUS_INSUFFICIENT_RESOURCES,
                                     END};
static const NTSTATUS st_prof_start[] = {STATUS_SUCCESS,
                                         HANDLE_ERRORS,
                                         STATUS_PROFILING_NOT_STOPPED,
                                         STATUS_PROFILING_AT_LIMIT,
                                         STATUS_INSUFFICIENT_RESOURCES,
                                         STATUS_ACCESS_VIOLATION,
                                         END};
static const NTSTATUS st_prof_stop[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_PROFILING_NOT_STARTED,
                                        END};
static const NTSTATUS st_handle_out[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_ACCESS_VIOLATION,
                                         END};
static const NTSTATUS st_out[] = {STATUS_SUCCESS, STATUS_ACCESS_VIOLATION, END};
static const NTSTATUS st_interval_set[] = {STATUS_SUCCESS, STATUS_PRIVILEGE_NOT_HELD,
                                           STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, END};
static const NTSTATUS st_success[] = {STATUS_SUCCESS, END};
static const NTSTATUS st_pmc_alloc[] = {STATUS_SUCCESS,
                                        STATUS_ACCESS_VIOLATION,
                                        STATUS_PMC_BAD_MODE,
                                        STATUS_PMC_BAD_FLAGS,
                                        STATUS_PMC_FLAG_NEEDS_PROCESS,
                                        STATUS_PMC_CALLCHAIN_COUNTING,
                                        STATUS_PMC_UNKNOWN_SOURCE,
                                        STATUS_PMC_SOURCE_UNSUPPORTED,
                                        STATUS_PMC_COUNTING_UNSUPPORTED,
                                        STATUS_PMC_BAD_CPU,
                                        STATUS_PMC_COUNT_TOO_SMALL,
                                        STATUS_PMC_COUNT_TOO_LARGE,
                                        STATUS_PRIVILEGE_NOT_HELD,
                                        STATUS_INSUFFICIENT_RESOURCES,
                                        STATUS_PMC_ROW_DISABLED, // another fuzzer's NtPmcAdmin
                                        END};
static const NTSTATUS st_attach[] = {STATUS_SUCCESS,
                                     HANDLE_ERRORS,
                                     STATUS_PMC_NOT_PROCESS_SCOPE,
                                     STATUS_ACCESS_DENIED,
                                     STATUS_PROCESS_IS_TERMINATING,
                                     STATUS_PMC_ALREADY_ATTACHED,
                                     STATUS_PMC_TOO_MANY_TARGETS,
                                     STATUS_INSUFFICIENT_RESOURCES,
                                     STATUS_PMC_READ_IN_RING3,
                                     END};
static const NTSTATUS st_detach[] = {
    STATUS_SUCCESS,       HANDLE_ERRORS,           STATUS_PMC_NOT_PROCESS_SCOPE,
    STATUS_ACCESS_DENIED, STATUS_PMC_NOT_ATTACHED, END};
static const NTSTATUS st_set_count[] = {STATUS_SUCCESS,
                                        HANDLE_ERRORS,
                                        STATUS_PMC_NOT_SAMPLING,
                                        STATUS_PMC_RUNNING,
                                        STATUS_PMC_COUNT_TOO_SMALL,
                                        STATUS_PMC_COUNT_TOO_LARGE,
                                        END};
static const NTSTATUS st_pmc_start[] = {STATUS_SUCCESS,
                                        HANDLE_ERRORS,
                                        STATUS_PMC_RUNNING,
                                        STATUS_PMC_NO_TARGET,
                                        STATUS_PMC_NO_LOG,
                                        STATUS_PMC_TOO_MANY_RUNNING,
                                        STATUS_PMC_TOO_MANY_TARGETS,
                                        STATUS_INSUFFICIENT_RESOURCES,
                                        END};
static const NTSTATUS st_pmc_stop[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_PMC_NOT_RUNNING, END};
static const NTSTATUS st_pmc_read[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_PMC_NOT_COUNTING,
                                       STATUS_ACCESS_VIOLATION, END};
static const NTSTATUS st_pmc_write[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_PMC_NOT_COUNTING,
                                        STATUS_PMC_RUNNING, END};
static const NTSTATUS st_get_msr[] = {
    STATUS_SUCCESS,           HANDLE_ERRORS,         STATUS_PMC_NOT_COUNTING, STATUS_NOT_SUPPORTED,
    STATUS_INVALID_PARAMETER, STATUS_PMC_ROW_SHARED, STATUS_ACCESS_VIOLATION, END};
static const NTSTATUS st_log_configure[] = {STATUS_SUCCESS,
                                            STATUS_ACCESS_VIOLATION,
                                            STATUS_PMC_BAD_LOG_SIZE,
                                            STATUS_PMC_BAD_DEPTH,
                                            STATUS_PMC_LOG_BUSY,
                                            STATUS_PMC_LOG_IN_USE,
                                            STATUS_PMC_TOO_MANY_LOGS,
                                            STATUS_PMC_LOG_QUOTA,
                                            STATUS_COMMITMENT_LIMIT,
                                            STATUS_INSUFFICIENT_RESOURCES,
                                            END};
static const NTSTATUS st_log_release[] = {STATUS_SUCCESS, STATUS_PMC_NO_LOG,
                                          STATUS_PMC_NOT_LOG_OWNER, STATUS_PMC_LOG_IN_USE, END};
static const NTSTATUS st_log_owner[] = {STATUS_SUCCESS, STATUS_PMC_NO_LOG, STATUS_PMC_NOT_LOG_OWNER,
                                        END};
static const NTSTATUS st_log_read[] = {STATUS_SUCCESS,           STATUS_PMC_NO_LOG,
                                       STATUS_PMC_NOT_LOG_OWNER, STATUS_ACCESS_VIOLATION,
                                       STATUS_BUFFER_TOO_SMALL,  END};
static const NTSTATUS st_spawn[] = {STATUS_SUCCESS,
                                    STATUS_INVALID_PARAMETER,
                                    STATUS_PRIVILEGE_NOT_HELD,
                                    STATUS_ACCESS_VIOLATION,
                                    STATUS_OBJECT_NAME_NOT_FOUND,
                                    STATUS_INVALID_IMAGE_FORMAT,
                                    STATUS_NO_MEMORY,
                                    STATUS_INSUFFICIENT_RESOURCES,
                                    STATUS_COMMITMENT_LIMIT,
                                    END};
static const NTSTATUS st_resume[] = {STATUS_SUCCESS, HANDLE_ERRORS, END};
static const NTSTATUS st_kill[] = {STATUS_SUCCESS, STATUS_INVALID_CID, STATUS_ACCESS_DENIED,
                                   STATUS_PROCESS_IS_TERMINATING, END};
static const NTSTATUS st_wait[] = {STATUS_SUCCESS, HANDLE_ERRORS, STATUS_ACCESS_VIOLATION,
                                   STATUS_INVALID_PARAMETER, END};
static const NTSTATUS st_open[] = {
    STATUS_SUCCESS,       STATUS_ACCESS_VIOLATION,       STATUS_INVALID_CID,
    STATUS_ACCESS_DENIED, STATUS_INSUFFICIENT_RESOURCES, END};
static const NTSTATUS st_pmc_rows[] = {
    STATUS_SUCCESS,      STATUS_ACCESS_VIOLATION,  STATUS_PMC_BAD_CPU,
    STATUS_PMC_BAD_ROW,  STATUS_INVALID_PARAMETER, STATUS_PRIVILEGE_NOT_HELD,
    STATUS_PMC_ROW_BUSY, STATUS_BUFFER_TOO_SMALL,  END};
static const NTSTATUS st_close[] = {STATUS_SUCCESS, STATUS_INVALID_HANDLE, END};

static const NTSTATUS *const allowed[OP_COUNT] = {
    [OP_PROF_CREATE] = st_create,
    [OP_PROF_CREATE_EX] = st_create,
    [OP_PROF_START] = st_prof_start,
    [OP_PROF_STOP] = st_prof_stop,
    [OP_PROF_STATS] = st_handle_out,
    [OP_INTERVAL_QUERY] = st_out,
    [OP_INTERVAL_SET] = st_interval_set,
    [OP_PROF_REMAP] = st_success,
    [OP_PMC_ALLOC] = st_pmc_alloc,
    [OP_PMC_ATTACH] = st_attach,
    [OP_PMC_DETACH] = st_detach,
    [OP_PMC_SET_COUNT] = st_set_count,
    [OP_PMC_START] = st_pmc_start,
    [OP_PMC_STOP] = st_pmc_stop,
    [OP_PMC_READ] = st_pmc_read,
    [OP_PMC_WRITE] = st_pmc_write,
    [OP_PMC_QUERY] = st_pmc_read,
    [OP_PMC_GET_MSR] = st_get_msr,
    [OP_PMC_ROWS] = st_pmc_rows,
    [OP_LOG_CONFIGURE] = st_log_configure,
    [OP_LOG_RELEASE] = st_log_release,
    [OP_LOG_FLUSH] = st_log_owner,
    [OP_LOG_READ] = st_log_read,
    [OP_LOG_WRITE] = st_log_owner,
    [OP_LOG_STATS] = st_out,
    [OP_SPAWN] = st_spawn,
    [OP_RESUME] = st_resume,
    [OP_KILL] = st_kill,
    [OP_WAIT] = st_wait,
    [OP_OPEN] = st_open,
    [OP_CLOSE] = st_close,
    [OP_PROCESS_ID] = st_handle_out,
    [OP_BURN] = st_success,
    [OP_SLEEP] = st_success,
};

static bool in_set(const NTSTATUS *set, NTSTATUS s)
{
    for (; *set != NO_STATUS; set++)
        if (*set == s)
            return true;
    return false;
}

void fuzz_fail(struct fuzzer *f, enum fail_kind kind, const char *fmt, ...)
{
    f->fails++;
    if (f->fail.kind != FAIL_NONE)
        return; // the first one is the sequence's failure
    f->fail.kind = kind;
    f->fail.op = f->op;
    f->fail.call = f->index;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->fail.what, sizeof f->fail.what, fmt, ap);
    va_end(ap);
    if (f->verbose)
        printf("fuzz-state:   failure at #%u: %s\n", f->index, f->fail.what);
}

// A call of op gave got: want is the status the rules fix (NO_STATUS: any of
// the op's documented ones); must_fail, a mutation no call may accept.
void check(struct fuzzer *f, unsigned op, NTSTATUS got, NTSTATUS want, bool must_fail)
{
    f->last = got;
    f->op = (uint8_t)op;
    if (want == STATUS_INVALID_HANDLE && got != want)
        fuzz_fail(f, FAIL_HANDLE,
                  "%s on a handle that names nothing (closed, or never one) gave %s", op_name(op),
                  nt_status_name(got));
    else if (want != NO_STATUS && got != want)
        fuzz_fail(f, FAIL_STATUS, "%s gave %s, the rules give %s", op_name(op), nt_status_name(got),
                  nt_status_name(want));
    else if (!in_set(allowed[op], got))
        fuzz_fail(f, FAIL_STATUS, "%s gave %s, not one of its documented statuses", op_name(op),
                  nt_status_name(got));
    else if (must_fail && NT_SUCCESS(got))
        fuzz_fail(f, FAIL_STATUS, "%s succeeded with argument %u mutated", op_name(op), f->mutated);
}

// ---------------------------------------------------------------------------
// Handles in the model.

static int type_of(const struct fuzzer *f, HANDLE h)
{
    if (!h)
        return HT_NONE;
    for (unsigned k = 0; k < NPROF; k++)
        if (f->prof[k].live && f->prof[k].h == h)
            return HT_PROFILE;
    for (unsigned k = 0; k < NPMC; k++)
        if (f->pmc[k].live && f->pmc[k].h == h)
            return HT_PMC;
    for (unsigned k = 0; k < NPROC; k++)
        if (f->proc[k].live && (f->proc[k].h == h || f->proc[k].dup == h))
            return HT_PROCESS;
    return f->self_h == h ? HT_PROCESS : HT_NONE;
}

// What a call that wants a handle of type gets for h: STATUS_SUCCESS when it
// names such an object, else the status handle lookup must give.
NTSTATUS handle_class(const struct fuzzer *f, HANDLE h, int type)
{
    if (h == NtCurrentProcess())
        return type == HT_PROCESS ? STATUS_SUCCESS : STATUS_OBJECT_TYPE_MISMATCH;
    if (h == NtCurrentThread())
        return STATUS_OBJECT_TYPE_MISMATCH;
    int t = type_of(f, h);
    if (t == HT_NONE)
        return STATUS_INVALID_HANDLE;
    return t == type ? STATUS_SUCCESS : STATUS_OBJECT_TYPE_MISMATCH;
}

// A handle a call just returned: a multiple of 4, and none the model holds.
bool new_handle_ok(struct fuzzer *f, HANDLE h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    if (!v || (v & 3) || type_of(f, h) != HT_NONE) {
        fuzz_fail(f, FAIL_HANDLE, "%s returned handle %#lx, which is not a fresh one",
                  op_name(f->op), v);
        return false;
    }
    if (v > f->max_handle)
        f->max_handle = v;
    for (unsigned i = 0; i < f->nstale && i < NSTALE; i++)
        if (f->stale[i] == h)
            f->stale[i] = (HANDLE)(uintptr_t)0x7FFFFFF0; // reused: stale no more
    return true;
}

void forget_handle(struct fuzzer *f, HANDLE h)
{
    f->stale[f->nstale++ % NSTALE] = h;
}

// Close h, remember it as stale, and check that it names nothing now: probe
// (a call of op taking the handle alone) gives STATUS_INVALID_HANDLE (one
// thread: nothing reused the handle meanwhile). The close's status is f->last.
void close_and_probe(struct fuzzer *f, HANDLE h, unsigned op, NTSTATUS (*probe)(HANDLE))
{
    NTSTATUS s = NtClose(h);
    check(f, OP_CLOSE, s, STATUS_SUCCESS, false);
    forget_handle(f, h);
    check(f, op, probe(h), STATUS_INVALID_HANDLE, false);
    f->last = s;
}

// A handle no call should accept as one of type: a closed one, none at all,
// a pseudo-handle, an object of another type, a kernel address.
HANDLE bad_handle(struct fuzzer *f, const struct call *c, int type)
{
    switch (c->how % 8) {
    case 0:
    case 1:
        if (f->nstale)
            return f->stale[(c->v >> 8) % (f->nstale < NSTALE ? f->nstale : NSTALE)];
        return (HANDLE)(uintptr_t)4;
    case 2: return NULL;
    case 3: return (HANDLE)(uintptr_t)(1 + (c->v & 2)); // odd
    case 4: return (HANDLE)(uintptr_t)(4 * (1000 + c->v % 60000));
    case 5: return type == HT_PROCESS ? NtCurrentThread() : NtCurrentProcess();
    case 6:
        for (unsigned k = 0; k < NPMC; k++)
            if (type != HT_PMC && f->pmc[k].live)
                return f->pmc[k].h;
        for (unsigned k = 0; k < NPROF; k++)
            if (type != HT_PROFILE && f->prof[k].live)
                return f->prof[k].h;
        return NtCurrentThread();
    default: return (HANDLE)(uintptr_t)0xFFFF800000001000ull;
    }
}

// Bad pointers for the kernel to write through.
uint64_t bad_pointer(const struct fuzzer *f, unsigned how)
{
    switch (how % 6) {
    case 0: return 0;
    case 1: return 0xFFFFFFFF80100000ull;             // the kernel's code
    case 2: return 0x0000800000000000ull;             // non-canonical
    case 3: return USER_TEXT;                         // our code: read-only
    case 4: return (uint64_t)(f->slots + SLOT_BYTES); // a guard page
    default: return USER_ADDRESS_LIMIT - 8;           // runs off the user half
    }
}

// Bad pointers for the kernel to read through (our code is readable).
uint64_t bad_in_pointer(const struct fuzzer *f, unsigned how)
{
    return how % 6 == 3 ? (uint64_t)(f->slots + SLOT_BYTES) + 4088 : bad_pointer(f, how);
}

int live_prof(const struct fuzzer *f, unsigned k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < NPROF; i++)
        n += f->prof[i].live;
    for (unsigned i = 0, seen = 0; n && i < NPROF; i++)
        if (f->prof[i].live && seen++ == k % n)
            return (int)i;
    return -1;
}

int live_pmc(const struct fuzzer *f, unsigned k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < NPMC; i++)
        n += f->pmc[i].live;
    for (unsigned i = 0, seen = 0; n && i < NPMC; i++)
        if (f->pmc[i].live && seen++ == k % n)
            return (int)i;
    return -1;
}

// A child slot with a handle open.
int live_proc(const struct fuzzer *f, unsigned k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < NPROC; i++)
        n += f->proc[i].live && (f->proc[i].h || f->proc[i].dup);
    for (unsigned i = 0, seen = 0; n && i < NPROC; i++)
        if (f->proc[i].live && (f->proc[i].h || f->proc[i].dup) && seen++ == k % n)
            return (int)i;
    return -1;
}

int live_child(const struct fuzzer *f, unsigned k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < NPROC; i++)
        n += f->proc[i].live;
    for (unsigned i = 0, seen = 0; n && i < NPROC; i++)
        if (f->proc[i].live && seen++ == k % n)
            return (int)i;
    return -1;
}

// ---------------------------------------------------------------------------
// Setup and one sequence.

static op_fn *const ops[OP_COUNT] = {
    [OP_PROF_CREATE] = op_prof_create,
    [OP_PROF_CREATE_EX] = op_prof_create_ex,
    [OP_PROF_START] = op_prof_start,
    [OP_PROF_STOP] = op_prof_stop,
    [OP_PROF_STATS] = op_prof_stats,
    [OP_INTERVAL_QUERY] = op_interval_query,
    [OP_INTERVAL_SET] = op_interval_set,
    [OP_PROF_REMAP] = op_prof_remap,
    [OP_PMC_ALLOC] = op_pmc_alloc,
    [OP_PMC_ATTACH] = op_pmc_attach,
    [OP_PMC_DETACH] = op_pmc_detach,
    [OP_PMC_SET_COUNT] = op_pmc_set_count,
    [OP_PMC_START] = op_pmc_start,
    [OP_PMC_STOP] = op_pmc_stop,
    [OP_PMC_READ] = op_pmc_read,
    [OP_PMC_WRITE] = op_pmc_write,
    [OP_PMC_QUERY] = op_pmc_query,
    [OP_PMC_GET_MSR] = op_pmc_get_msr,
    [OP_PMC_ROWS] = op_pmc_rows,
    [OP_LOG_CONFIGURE] = op_log_configure,
    [OP_LOG_RELEASE] = op_log_release,
    [OP_LOG_FLUSH] = op_log_flush,
    [OP_LOG_READ] = op_log_read,
    [OP_LOG_WRITE] = op_log_write,
    [OP_LOG_STATS] = op_log_stats,
    [OP_SPAWN] = op_spawn,
    [OP_RESUME] = op_resume,
    [OP_KILL] = op_kill,
    [OP_WAIT] = op_wait,
    [OP_OPEN] = op_open,
    [OP_CLOSE] = op_close,
    [OP_PROCESS_ID] = op_process_id,
    [OP_BURN] = op_burn,
    [OP_SLEEP] = op_sleep,
};

static void machine_facts(struct fuzzer *f)
{
    static struct sys_cpu_info cpu[64];
    static struct sys_process_info list[64];
    uint32_t n = 0;
    f->pid = SysGetPid();
    if (NT_SUCCESS(SysCpuInfo(cpu, 64, &n)))
        for (uint32_t i = 0; i < n && i < 64; i++)
            if (cpu[i].online) {
                f->online |= 1ull << i;
                f->ncpus = i + 1;
            }
    n = 0;
    SysProcessList(list, 64, &n);
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (list[i].pid == f->pid) {
            f->privileged = list[i].privileged != 0;
            f->parent = list[i].parent;
        }
    struct sys_profile_source rows[ProfileSourceCount];
    n = 0;
    f->time_min = 1221;
    f->time_max = 0xFFFFFFFF;
    if (NT_SUCCESS(SysProfileSources(rows, ProfileSourceCount, &n)))
        for (uint32_t i = 0; i < n && i < ProfileSourceCount; i++)
            if (rows[i].source == ProfileTime) {
                f->time_min = rows[i].min_interval;
                f->time_max = rows[i].max_interval;
            }
}

// One region: the slots and the log buffer, each followed by an unmapped
// page, and a last page left mapped so that no later mapping lands in the
// last hole (a hole at the end of a region is where the next one goes).
int fuzzer_init(struct fuzzer *f)
{
    memset(f, 0, sizeof *f);
    machine_facts(f);
    size_t slots = NPROF * (SLOT_BYTES + PAGE_BYTES);
    void *p = NULL;
    if (!f->ncpus ||
        !NT_SUCCESS(SysMap(&p, slots + LOG_BYTES + 2 * PAGE_BYTES, PROT_READ | PROT_WRITE)))
        return -1;
    f->slots = p;
    f->logbuf = f->slots + slots;
    for (unsigned k = 0; k < NPROF; k++)
        if (!NT_SUCCESS(SysUnmap(slot_base(f, k) + SLOT_BYTES, PAGE_BYTES)))
            return -1;
    return NT_SUCCESS(SysUnmap(f->logbuf + LOG_BYTES, PAGE_BYTES)) ? 0 : -1;
}

// Runs calls [0, len) of the sequence (only those keep marks, when given),
// then the teardown and its checks. The first failure's kind.
enum fail_kind run_sequence(struct fuzzer *f, uint64_t seed, unsigned len, const uint8_t *keep)
{
    f->fail = (struct failure){FAIL_NONE, 0, 0, ""};
    f->fails = 0;
    for (unsigned i = 0; i < len; i++) {
        if (keep && !keep[i])
            continue;
        struct call c;
        gen_call(seed, i, &c);
        f->index = i;
        f->op = c.op;
        f->last = NO_STATUS;
        f->mutated = c.mutate;
        ops[c.op](f, &c);
        f->ran[c.op]++;
        f->succeeded[c.op] += f->last == STATUS_SUCCESS;
        if (f->verbose)
            print_call(i, &c, f->last);
    }
    f->index = len;
    f->mutated = 0;
    teardown(f);
    return f->fail.kind;
}
