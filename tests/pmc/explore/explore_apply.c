// Each step on the kernel, and what it changes in the reference. A step the
// kernel refuses (its status says so) changes nothing in the reference: the
// explorer checks what the kernel does with what it accepted.
#include <stdio.h>
#include <string.h>
#include "explore.h"
#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "pmc/ke/profile.h"
#include "ke_host.h"
#include "pmc/hal/counts.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hwpmc/loggers.h"
#include "pmc/hwpmc/admin.h"
#include "tests.h"

#define USER_IP   0x401000ull
#define KERNEL_IP 0xFFFFFFFF80100000ull

struct ex_ref ex_ref;
static struct process proc[EX_PROCS];
static struct thread thr[EX_PROCS];

static void on_sample(KPROFILE_SOURCE source, const struct intr_frame *f);

static unsigned cpu_of(unsigned a)
{
    return a % ex_ref.ncpus;
}

void ex_setup(const struct ex_variant *v)
{
    pmc_pmi_as_nmi = v->nmi;
    ke_host_boot(&v->cfg);
    pmc_loggers_init();
    HAL_PROFILE_INTERRUPT_HANDLER h = on_sample;
    HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h), &h);
    for (unsigned i = 0; i < EX_PROCS; i++)
        ke_host_process(&proc[i], &thr[i], 10 + i);
    ke_host_log.owner_pid = proc[0].pid;
    memset(&ex_ref, 0, sizeof ex_ref);
    ex_ref.ncpus = v->cfg.ncpus;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        ex_ref.ngp += pmc_hw[i].kind == PMC_COUNTER_GENERAL;
    for (unsigned c = 0; c < MODEL_MAX_CPUS; c++)
        ex_ref.running[c] = -1;
    for (unsigned p = 0; p < EX_PROCS; p++)
        ex_ref.alive[p] = true;
}

// The profile interrupt's sample, as the kernel's profile layer takes it: the
// SampledProfile hook fires for the loggers (kernel/pmc/ke/sample.c).
static void on_sample(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    (void)f;
    unsigned cpu = cpu_id();
    for (unsigned i = 0; i < EX_SOURCES; i++)
        if ((int)ex_source(i) == (int)source && cpu < MODEL_MAX_CPUS)
            ex_ref.samples[cpu][i]++;
    const struct process *p = cpus[cpu].current->proc;
    pmc_hook(HOOK_PROFILE, p ? p->pid : 0, source);
    extern char ex_pending[EX_MSG];
    if (!ex_pending[0])
        ex_check_records(ex_pending, EX_MSG);
}

// ---- the PMC objects ----

static void op_alloc(const struct ex_op *op)
{
    struct ex_pmc *m = &ex_ref.pmc[op->a % EX_SLOTS];
    if (m->live)
        return;
    static const uint32_t ring_flags[3] = {0, PMC_F_USER, PMC_F_KERNEL};
    unsigned mode = PMC_MODE_SS + op->b % 4, src = op->c % EX_SOURCES;
    struct pmc_alloc a = {.source = (uint32_t)ex_source(src),
                          .mode = mode,
                          .flags = ring_flags[op->n % 3],
                          .cpu = PMC_CPU_ANY};
    struct object *o = NULL;
    if (!NT_SUCCESS(pmc_allocate(&proc[0], &a, &o)))
        return;
    static const uint8_t rings[3] = {3, 1, 2};
    *m = (struct ex_pmc){.live = true,
                         .counting = mode == PMC_MODE_SC || mode == PMC_MODE_TC,
                         .system = mode == PMC_MODE_SS || mode == PMC_MODE_SC,
                         .src = (uint8_t)src,
                         .rings = rings[op->n % 3],
                         .p = pmc_from_object(o)};
}

static void op_pmc(const struct ex_op *op)
{
    struct ex_pmc *m = &ex_ref.pmc[op->a % EX_SLOTS];
    unsigned t = 1 + op->b % 3;
    if (!m->live)
        return;
    switch (op->kind) {
    case OP_ATTACH:
        if (NT_SUCCESS(pmc_attach(m->p, &proc[0], &proc[t])))
            m->targets |= (uint8_t)(1u << t);
        break;
    case OP_DETACH:
        if (NT_SUCCESS(pmc_detach(m->p, &proc[0], &proc[t])))
            m->targets &= (uint8_t) ~(1u << t);
        break;
    case OP_START:
        if (NT_SUCCESS(pmc_start(m->p, &proc[0]))) {
            if (!m->system && !m->targets) // an unattached process-scope PMC: its owner
                m->targets = 1;
            m->running = true;
        }
        break;
    case OP_STOP:
        if (NT_SUCCESS(pmc_stop(m->p)))
            m->running = false;
        break;
    case OP_WRITE:
        if (m->counting && NT_SUCCESS(pmc_write(m->p, op->n)))
            m->expect = m->last = op->n;
        break;
    case OP_RELEASE:
        object_unref(&m->p->obj);
        m->live = false;
        break;
    default: break;
    }
}

// ---- the HAL's profile sources ----

static void close_windows(unsigned s)
{
    ex_note_handler(); // the PMI path's instructions up to the stop count in this window
    for (unsigned c = 0; c < ex_ref.ncpus; c++) {
        ex_ref.budget[c][s] += ex_ref.window[c][s] / ex_ref.hal_interval[s];
        ex_ref.window[c][s] = 0;
    }
}

static void op_hal(const struct ex_op *op)
{
    unsigned s = op->a % EX_SOURCES;
    KPROFILE_SOURCE src = ex_source(s);
    if (op->kind == OP_HAL_START && !ex_ref.hal_on[s]) {
        const char *why = NULL;
        HAL_PROFILE_SOURCE_INTERVAL in = {.ProfileSource = src, .Interval = op->n};
        if (op->n) // its period first, as KeSetIntervalProfile before KeStartProfile
            HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in);
        ex_note_handler(); // the PMI path's instructions before the start: not in its window
        if (NT_SUCCESS(HalStartProfileInterrupt(src, &why))) {
            ex_ref.hal_on[s] = true;
            uint64_t iv = KeQueryIntervalProfile(src);
            ex_ref.hal_interval[s] = iv ? iv : 1;
        }
    } else if (op->kind == OP_HAL_STOP && ex_ref.hal_on[s]) {
        if (NT_SUCCESS(HalStopProfileInterrupt(src, NULL))) {
            close_windows(s);
            ex_ref.hal_on[s] = false;
        }
    } else if (op->kind == OP_HAL_PERIOD) {
        HAL_PROFILE_SOURCE_INTERVAL in = {.ProfileSource = src, .Interval = op->n};
        if (NT_SUCCESS(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in)) &&
            ex_ref.hal_on[s] && in.Interval && in.Interval < ex_ref.hal_interval[s])
            ex_ref.hal_interval[s] = in.Interval; // the smaller period bounds the samples
    }
}

// ---- the loggers ----

static unsigned logger_events(const struct ex_op *op, uint8_t src[4], uint32_t ev[4])
{
    unsigned n = 1 + op->b % 4;
    for (unsigned i = 0; i < n; i++) {
        src[i] = (uint8_t)(((unsigned)op->a >> (2 * i)) % EX_SOURCES);
        ev[i] = (uint32_t)ex_source(src[i]);
    }
    return n;
}

static void logger_on(struct ex_logger *l, unsigned n, const uint8_t src[4])
{
    memset(l, 0, sizeof *l);
    l->on = true;
    l->n = n;
    memcpy(l->src, src, 4);
}

static bool trace_on(const struct ex_op *op, const uint32_t ev[4], unsigned n)
{
    TRACEHANDLE h = 0;
    if (!NT_SUCCESS(pmc_logger_create(&proc[0], &h)))
        return false;
    static const uint16_t hooks[5] = {ETW_HOOK_CSWITCH, ETW_HOOK_SAMPLED_PROFILE,
                                      ETW_HOOK_SYSCALL_ENTER, ETW_HOOK_SYSCALL_EXIT,
                                      ETW_HOOK_PAGE_FAULT_DZ};
    static const uint8_t bit[5] = {1, 2, 4, 4, 8}; // op->c's bit for each
    uint32_t ids[ETW_MAX_PMC_EVENTS];
    unsigned nids = 0;
    for (unsigned i = 0; i < 5 && nids < ETW_MAX_PMC_EVENTS; i++)
        if (op->c & bit[i] || (i == 0 && !(op->c & 15)))
            ids[nids++] = hooks[i];
    if (!NT_SUCCESS(pmc_logger_set_counters(&proc[0], h, ev, n)) ||
        !NT_SUCCESS(pmc_logger_set_hooks(&proc[0], h, ids, nids))) {
        pmc_logger_close(&proc[0], h);
        return false;
    }
    ex_ref.trace = h;
    return true;
}

static void op_logger(const struct ex_op *op)
{
    uint8_t src[4] = {0};
    uint32_t ev[4] = {0};
    unsigned n = logger_events(op, src, ev);
    struct ex_logger *csw = &ex_ref.log[0], *tr = &ex_ref.log[1];
    if (op->kind == OP_CSW_START && !csw->on &&
        NT_SUCCESS(pmc_logger_cswitch_start(&proc[0], ev, n)))
        logger_on(csw, n, src);
    else if (op->kind == OP_CSW_STOP && csw->on && NT_SUCCESS(pmc_logger_cswitch_stop()))
        csw->on = false;
    else if (op->kind == OP_TRACE_ON && !tr->on && trace_on(op, ev, n))
        logger_on(tr, n, src);
    else if (op->kind == OP_TRACE_OFF && tr->on &&
             NT_SUCCESS(pmc_logger_close(&proc[0], (TRACEHANDLE)ex_ref.trace)))
        tr->on = false;
}

// ---- the events loggers hook ----

// A system call (its entry and exit hooks) or a ring-3 demand-zero page
// fault, on the CPU, as the kernel's paths fire them.
static void hook_here(void *arg)
{
    const struct ex_op *op = arg;
    const struct process *p = cpus[cpu_id()].current->proc;
    uint32_t pid = p ? p->pid : 0;
    if (op->b & 1) {
        if (process_fault_hook)
            process_fault_hook(true);
        return;
    }
    pmc_hook(HOOK_SYSCALL_ENTER, pid, op->n & 0xFF);
    pmc_hook(HOOK_SYSCALL_EXIT, pid, op->n & 0xFF);
}

// ---- the scheduler ----

static void op_switch(const struct ex_op *op)
{
    unsigned cpu = cpu_of(op->a), t = op->b % (EX_PROCS + 1); // 0: idle
    int p = t ? (int)t - 1 : -1;
    if (p >= 0 && !ex_ref.alive[p])
        p = -1;
    for (unsigned c = 0; p >= 0 && c < ex_ref.ncpus; c++)
        if (c != cpu && ex_ref.running[c] == p) { // a migration: off its CPU first
            ke_host_switch(c, NULL);
            ex_ref.running[c] = -1;
        }
    ke_host_switch(cpu, p >= 0 ? &thr[p] : NULL);
    ex_ref.running[cpu] = p;
}

static void op_exit(const struct ex_op *op)
{
    unsigned p = 1 + op->b % 3, cpu = 0;
    if (!ex_ref.alive[p])
        return;
    for (unsigned c = 0; c < ex_ref.ncpus; c++)
        if (ex_ref.running[c] == (int)p)
            cpu = c;
    ke_host_exit(cpu, &proc[p]);
    ex_ref.alive[p] = false;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        ex_ref.pmc[i].targets &= (uint8_t) ~(1u << p);
}

// Whether count m counts an event of source s on cpu in ring user now.
static bool counts_here(const struct ex_pmc *m, unsigned cpu, unsigned s, bool user)
{
    if (!m->live || !m->counting || !m->running || m->src != s)
        return false;
    if (!(m->rings & (user ? 1 : 2)))
        return false;
    int p = ex_ref.running[cpu];
    return m->system || (p >= 0 && (m->targets >> p & 1));
}

static void op_retire(const struct ex_op *op)
{
    unsigned cpu = cpu_of(op->a), s = op->b % EX_SOURCES;
    bool user = op->c & 1;
    model_set_time(clock_ns() + op->n); // a nanosecond an event: time runs while they do
    ex_ref.retiring = true;
    ex_ref.r_cpu = cpu;
    ex_ref.r_src = s;
    ex_ref.r_counted = model_counted(cpu, ex_event(s));
    ex_ref.r_handler = model_handler_retired(cpu);
    model_retire(cpu, ex_event(s), op->n, user ? USER_IP : KERNEL_IP, user);
    ex_ref.retiring = false;
    ex_ref.total[cpu][s] += op->n;
    if (ex_ref.hal_on[s])
        ex_ref.window[cpu][s] += op->n;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        if (counts_here(&ex_ref.pmc[i], cpu, s, user))
            ex_ref.pmc[i].expect += op->n;
}

// ---- multiplexing: where counts may share counters ----

// More hardware counts, sampled sources and logger events than general
// counters enabled everywhere: a count may then share its row and be
// multiplexed, and its value may fall short. Otherwise every count has a
// counter of its own and must be exact.
static void note_demand(void)
{
    unsigned demand = ex_ref.log[0].on * ex_ref.log[0].n + ex_ref.log[1].on * ex_ref.log[1].n;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        demand += ex_ref.pmc[i].live && ex_ref.pmc[i].counting;
    for (unsigned s = 0; s < EX_SOURCES; s++)
        demand += ex_ref.hal_on[s];
    unsigned capacity = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        capacity += pmc_hw[i].kind == PMC_COUNTER_GENERAL && !pmc_row_off_anywhere(i);
    if (demand <= capacity)
        return;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        ex_ref.pmc[i].mux |= ex_ref.pmc[i].live;
}

// The PMI path's own instructions (kernel mode) since the last step: sampled
// sources and the counts of instructions that count the kernel may have them.
void ex_note_handler(void)
{
    for (unsigned c = 0; c < ex_ref.ncpus; c++) {
        uint64_t h = model_handler_retired(c), d = h - ex_ref.handler[c];
        ex_ref.handler[c] = h;
        for (unsigned s = 0; s < EX_SOURCES; s++)
            if (ex_ref.hal_on[s] && ex_event(s) == EV_INSTRUCTIONS)
                ex_ref.window[c][s] += d;
        for (unsigned i = 0; i < EX_SLOTS; i++) {
            struct ex_pmc *m = &ex_ref.pmc[i];
            if (m->live && m->counting && (m->rings & 2) && ex_event(m->src) == EV_INSTRUCTIONS)
                m->slack += d;
        }
    }
}

// After each step (and any NMI in it): what the reference learns from the model.
void ex_note_step(void)
{
    note_demand();
    ex_note_handler();
}

void ex_apply(const struct ex_op *op)
{
    switch (op->kind) {
    case OP_ALLOC: op_alloc(op); break;
    case OP_ATTACH:
    case OP_DETACH:
    case OP_START:
    case OP_STOP:
    case OP_WRITE:
    case OP_RELEASE: op_pmc(op); break;
    case OP_HAL_START:
    case OP_HAL_STOP:
    case OP_HAL_PERIOD: op_hal(op); break;
    case OP_CSW_START:
    case OP_CSW_STOP:
    case OP_TRACE_ON:
    case OP_TRACE_OFF: op_logger(op); break;
    case OP_ROW_ADMIN: // the counters' rows, through the administration call
        if (pmc_ncounters)
            pmc_admin(cpu_of(op->a), op->b % pmc_ncounters,
                      op->c & 1 ? PMC_STATE_DISABLED : PMC_STATE_FREE);
        break;
    case OP_SWITCH: op_switch(op); break;
    case OP_EXIT: op_exit(op); break;
    case OP_TICK:
        model_set_time(clock_ns() + 1000000);
        ke_host_tick(cpu_of(op->a));
        break;
    case OP_RETIRE: op_retire(op); break;
    case OP_HOOK: model_on_cpu(cpu_of(op->a), hook_here, (void *)op); break;
    case OP_PMI: model_advance_time(1000); break;
    default: break; // OP_READ and OP_NMI: explore_run.c
    }
}

// Everything given back, as a user's exit and the admin's stop would.
void ex_teardown(void)
{
    for (unsigned i = 0; i < EX_SLOTS; i++)
        if (ex_ref.pmc[i].live) {
            object_unref(&ex_ref.pmc[i].p->obj);
            ex_ref.pmc[i].live = false;
        }
    for (unsigned s = 0; s < EX_SOURCES; s++)
        if (ex_ref.hal_on[s])
            HalStopProfileInterrupt(ex_source(s), NULL);
    if (ex_ref.log[0].on)
        pmc_logger_cswitch_stop();
    if (ex_ref.log[1].on)
        pmc_logger_close(&proc[0], (TRACEHANDLE)ex_ref.trace);
    for (unsigned c = 0; c < ex_ref.ncpus; c++)
        for (unsigned i = 0; i < pmc_ncounters; i++)
            pmc_admin(c, i, PMC_STATE_FREE);
    for (unsigned c = 0; c < ex_ref.ncpus; c++)
        ke_host_switch(c, NULL);
}
