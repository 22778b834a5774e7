// Process creation, exit, wait and kill.
#include "core/process.h"

#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/cpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trap.h"

#include "core/elf_load.h"
#include "core/heap.h"
#include "core/irqoff.h"
#include "core/ramdisk.h"
#include "core/swevent.h"
#include "core/vm.h"

static process_watcher watchers[PROCESS_WATCHERS];
static unsigned nwatchers;

void process_watch(process_watcher fn)
{
    assert(nwatchers < PROCESS_WATCHERS);
    watchers[nwatchers] = fn;
    __atomic_store_n(&nwatchers, nwatchers + 1, __ATOMIC_RELEASE);
}

static void notify(struct process *p, enum process_event event)
{
    assert(irq_enabled()); // process.h: watchers allocate, and some spawn
    unsigned n = __atomic_load_n(&nwatchers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++)
        watchers[i](p, event);
}

static size_t area_bytes;

void process_area_reserve(size_t bytes)
{
    assert(area_bytes == 0 && bytes % 8 == 0);
    area_bytes = bytes;
}

static struct spinlock process_lock = SPINLOCK_INIT("processes");
static struct process *processes;
static uint32_t next_pid = 1;
static uint64_t live;

struct process *process_current(void)
{
    return current_thread()->proc;
}

static void process_destroy(struct object *o)
{
    struct process *p = (struct process *)o;
    uint64_t f = spin_lock_irqsave(&process_lock);
    for (struct process **pp = &processes; *pp; pp = &(*pp)->list_next)
        if (*pp == p) {
            *pp = p->list_next;
            break;
        }
    live--;
    spin_unlock_irqrestore(&process_lock, f);
    as_destroy(&p->as); // already empty unless the process never ran
    notify(p, PROCESS_DESTROYED);
    kfree(p);
}

static const char *basename(const char *path)
{
    const char *b = path;
    for (const char *s = path; *s; s++)
        if (*s == '/')
            b = s + 1;
    return b;
}

// The initial stack, System V style: argc, argv[], NULL, then the strings.
static NTSTATUS build_stack(struct addrspace *as, const char *const *argv, int argc, uint64_t *rsp)
{
    uint64_t bottom = USER_STACK_TOP - USER_STACK_SIZE;
    NTSTATUS s = as_map(as, bottom, USER_STACK_SIZE, PROT_READ | PROT_WRITE);
    if (!NT_SUCCESS(s))
        return s;
    uint64_t sp = USER_STACK_TOP;
    uint64_t ptrs[MAX_ARGS + 1];
    for (int i = argc - 1; i >= 0; i--) {
        size_t len = strlen(argv[i]) + 1;
        sp -= len;
        if (!as_write(as, sp, argv[i], len))
            return STATUS_NO_MEMORY;
        ptrs[i] = sp;
    }
    ptrs[argc] = 0;
    sp = ALIGN_DOWN(sp, 16);
    if ((argc + 2) % 2) // argc + argv[] + NULL: keep rsp 16-aligned at argc
        sp -= 8;
    sp -= (uint64_t)(argc + 1) * 8;
    if (!as_write(as, sp, ptrs, (uint64_t)(argc + 1) * 8))
        return STATUS_NO_MEMORY;
    uint64_t n = (uint64_t)argc;
    sp -= 8;
    if (!as_write(as, sp, &n, 8))
        return STATUS_NO_MEMORY;
    *rsp = sp;
    return STATUS_SUCCESS;
}

// Give p its pid and group and put it on the process list, unless its
// spawner is being killed. Under process_lock, against
// process_interrupt_group: a spawner it reached first does not spawn; one it
// reaches later finds the child on the list, thread or not, and marks it too
// (Linux's copy_process checks for a pending fatal signal under its lock for
// the same reason).
static bool link_child(struct process *p, const struct process *spawner, uint32_t flags)
{
    uint64_t f = spin_lock_irqsave(&process_lock);
    bool dying = spawner && spawner->killed;
    if (!dying) {
        p->pid = next_pid++;
        p->pgid = spawner && !(flags & SPAWN_NEW_GROUP) ? spawner->pgid : p->pid;
        p->list_next = processes;
        processes = p;
        live++;
    }
    spin_unlock_irqrestore(&process_lock, f);
    return !dying;
}

NTSTATUS process_spawn(const char *path, const char *const *argv, int argc, uint32_t flags,
                       uint32_t parent, bool privileged, struct process **out)
{
    const struct ramdisk_file *file = ramdisk_find(path);
    if (!file)
        return STATUS_OBJECT_NAME_NOT_FOUND;
    if (argc < 0 || argc > MAX_ARGS)
        return STATUS_INVALID_PARAMETER;
    struct process *p = kzalloc(ALIGN_UP(sizeof *p, 8) + area_bytes);
    if (!p)
        return STATUS_NO_MEMORY;
    p->layer_area = (uint8_t *)p + ALIGN_UP(sizeof *p, 8);
    object_init(&p->obj, OBJ_PROCESS, process_destroy);
    handle_table_init(&p->handles);
    p->parent = parent;
    p->privileged = privileged;
    p->kill_status = PROCESS_KILLED_STATUS;
    struct process *spawner = process_current();
    const char *name = basename(path);
    memcpy(p->name, name, MIN(strlen(name), sizeof p->name - 1));
    if (!link_child(p, spawner, flags)) {
        kfree(p);
        return STATUS_PROCESS_IS_TERMINATING;
    }

    NTSTATUS s = STATUS_NO_MEMORY;
    uint64_t entry = 0, rsp = 0;
    if (as_create(&p->as, privileged)) // the memory limits follow the privilege
        s = elf_load(&p->as, file->data, file->size, &entry);
    if (NT_SUCCESS(s))
        s = build_stack(&p->as, argv, argc, &rsp);
    if (NT_SUCCESS(s)) {
        struct trapframe tf = {0};
        tf.rip = entry;
        tf.cs = SEL_UCODE;
        tf.rflags = RFLAGS_IF | 0x2;
        tf.rsp = rsp;
        tf.ss = SEL_UDATA;
        struct thread *t = thread_create_user(p, &tf);
        uint64_t f2 = spin_lock_irqsave(&process_lock);
        p->thread = t; // for process_interrupt_group and process_kill, which read it under the lock
        spin_unlock_irqrestore(&process_lock, f2);
        if (!t)
            s = STATUS_NO_MEMORY;
    }
    if (!NT_SUCCESS(s)) {
        p->exited = true;
        object_unref(&p->obj);
        return s;
    }
    object_ref(&p->obj); // the thread's reference, dropped when it exits
    notify(p, PROCESS_SPAWNED);
    *out = p;
    if (flags & SPAWN_SUSPENDED)
        p->suspended = true;
    else
        sched_make_runnable(p->thread);
    return STATUS_SUCCESS;
}

void process_resume(struct process *p)
{
    uint64_t f = spin_lock_irqsave(&process_lock);
    bool run = p->suspended && !p->exited;
    p->suspended = false;
    spin_unlock_irqrestore(&process_lock, f);
    if (run)
        sched_make_runnable(p->thread);
}

// The list holds no reference: a process whose last reference is gone stays
// on it until process_destroy takes process_lock to unlink it, so the finder
// takes its reference only while the count is not zero (object.h's rule).
struct process *process_by_pid(uint32_t pid)
{
    uint64_t f = spin_lock_irqsave(&process_lock);
    struct process *p = processes;
    while (p && p->pid != pid)
        p = p->list_next;
    if (p && !object_ref_live(&p->obj))
        p = NULL; // being destroyed: gone for finders
    spin_unlock_irqrestore(&process_lock, f);
    return p;
}

NTSTATUS process_kill(uint32_t pid)
{
    struct process *p = process_by_pid(pid), *me = process_current();
    if (!p)
        return STATUS_INVALID_CID;
    NTSTATUS s = STATUS_SUCCESS;
    if (!process_may_control(me, p)) {
        s = STATUS_ACCESS_DENIED;
    } else if (p->exited) {
        s = STATUS_PROCESS_IS_TERMINATING;
    } else {
        if (!p->killed)
            p->kill_status = PROCESS_KILLED_STATUS;
        p->killed = true;
        // The thread is woken under process_lock: exit clears p->thread under
        // it before the thread ends, and only then can the thread be freed.
        uint64_t f = spin_lock_irqsave(&process_lock);
        struct thread *t = p->exited ? NULL : p->thread;
        bool suspended = p->suspended;
        if (t && !suspended)
            wakeup_thread(t);
        spin_unlock_irqrestore(&process_lock, f);
        if (t && suspended)
            process_resume(p); // it dies on its way to ring 3
    }
    object_unref(&p->obj);
    return s;
}

int process_wait(struct process *p)
{
    struct process *me = process_current();
    uint64_t f = irq_save();
    while (!p->exited && !me->killed && !me->alerted)
        sleep_alertable(p, &p->exited, 0, WAIT_CHILD);
    irq_restore(f);
    return p->exited ? p->exit_status : PROCESS_KILLED_STATUS;
}

void process_exit_current(int status)
{
    struct process *p = process_current();
    sti(); // closing handles may free memory and take locks
    handle_table_close_all(&p->handles);
    p->exit_status = p->killed ? p->kill_status : status;
    notify(p, PROCESS_EXITING);
    // Every page and page table goes with interrupts on, in short sections:
    // the tables stay loaded meanwhile, and a switch back loads them again.
    as_release(&p->as);
    cli();
    // Interrupts stay off from here to the switch away: the tracker measures
    // this part of it (core/irqoff.h).
    irqoff_section_begin((uint64_t)(uintptr_t)process_exit_current, "exit");
    vm_load_kernel();   // off the PML4 we are about to free
    as_destroy(&p->as); // only the PML4 is left
    uint64_t f = spin_lock_irqsave(&process_lock);
    p->exit_status = p->killed ? p->kill_status : status;
    p->thread = NULL;
    spin_unlock_irqrestore(&process_lock, f);
    irqoff_section_end();
    thread_exit(); // process_thread_gone follows once the thread's stack is freed
}

// Processes whose last thread is gone and whose exit the reaper has not yet
// told, oldest first, each still held by its thread's reference; reaper_work
// is set while the queue may be non-empty (process_lock).
static struct process *gone_head, **gone_tail = &gone_head;
static volatile bool reaper_work;

// The scheduler calls this on the CPU's next thread, interrupts off, once the
// dead thread's stack is freed (sched_after_switch). The watchers cannot run
// there: that thread is an idle thread or another process's, with interrupts
// off, and a watcher spawning there (init_exited) would put the child in that
// process's group, or fail while that process is being killed (link_child).
// The reaper tells the exit instead.
void process_thread_gone(struct process *p)
{
    uint64_t f = spin_lock_irqsave(&process_lock);
    p->gone_next = NULL;
    *gone_tail = p;
    gone_tail = &p->gone_next;
    reaper_work = true;
    spin_unlock_irqrestore(&process_lock, f);
    wakeup(&gone_head);
}

// After the last thread's kernel stack is gone (sched.c): only now is the
// process reported as exited, so a waiter sees every resource returned. That
// includes the thread's reference: it is dropped before exited is set, or a
// waiter could reap the process and close its handle while the process object
// still lived on the thread's reference (stress reap). When that reference is
// not the last, another holder may drop the last one as soon as ours is gone;
// process_destroy then waits for process_lock to unlink before it frees p, so
// p stays valid while the lock is held here.
static void process_exited(struct process *p)
{
    notify(p, PROCESS_EXITED);
    uint64_t f = spin_lock_irqsave(&process_lock);
    bool others = object_unref_unless_last(&p->obj); // the thread's reference
    p->exited = true;
    spin_unlock_irqrestore(&process_lock, f);
    wakeup(p); // the address only: p may be gone now
    if (!others)
        object_unref(&p->obj); // it was the last: nobody waits on p
}

// The reaper, a kernel thread: each exit told in process context with
// interrupts on (process.h), in the order the threads ended.
static void NORETURN reaper(void)
{
    for (;;) {
        uint64_t f = spin_lock_irqsave(&process_lock);
        struct process *p = gone_head;
        if (p) {
            gone_head = p->gone_next;
            if (!gone_head)
                gone_tail = &gone_head;
        } else {
            reaper_work = false; // under the lock, seen empty
        }
        spin_unlock_irqrestore(&process_lock, f);
        if (p) {
            process_exited(p);
            continue;
        }
        // A process queued since sets reaper_work before its wakeup, and
        // sleep_on looks at it under the scheduler's lock: none is missed.
        cli();
        sleep_on(&gone_head, &reaper_work, 0, WAIT_OTHER);
        sti();
    }
}

void process_interrupt_group(uint32_t pgid)
{
    uint64_t f = spin_lock_irqsave(&process_lock);
    for (struct process *p = processes; p; p = p->list_next) {
        // A process being born has no thread yet: its flag is set all the
        // same, and its thread meets it before its first instruction in
        // ring 3 (sched.c's thread_first_run).
        if (p->pgid != pgid || p->exited)
            continue;
        if (p->interrupt_notify) {
            p->alerted = true;
        } else if (!p->killed) {
            p->kill_status = EXIT_STATUS_INTERRUPTED;
            p->killed = true;
        }
        if (p->thread && !p->suspended) // a suspended one meets its flag when resumed
            wakeup_thread(p->thread);
    }
    spin_unlock_irqrestore(&process_lock, f);
}

NTSTATUS process_group_check(const struct process *me, uint32_t pgid)
{
    if (pgid == 0 || (me && pgid == me->pgid))
        return STATUS_SUCCESS;
    NTSTATUS s = STATUS_INVALID_CID;
    uint64_t f = spin_lock_irqsave(&process_lock);
    for (struct process *p = processes; p; p = p->list_next)
        if (p->pid == pgid && p->pgid == pgid && !p->exited) {
            s = process_may_control(me, p) ? STATUS_SUCCESS : STATUS_ACCESS_DENIED;
            break;
        }
    spin_unlock_irqrestore(&process_lock, f);
    return s;
}

void (*process_fault_hook)(bool demand_zero);

void process_fault(struct trapframe *tf)
{
    struct process *p = process_current();
    void (*hook)(bool) = READ_ONCE(process_fault_hook);
    if (tf->vector == 14) {
        swevent_count(PMC_SW_PAGE_FAULTS);
        bool demand_zero = !(tf->error & 1) && as_demand_fault(&p->as, read_cr2());
        if (hook)
            hook(demand_zero);
        if (demand_zero)
            return; // a demand-zero page, now present: retry the access
    }
    if (tf->vector == 14)
        kprintf("[pid %u %s] killed: page fault at %#lx ip %#lx\n", p->pid, p->name, read_cr2(),
                tf->rip);
    else
        kprintf("[pid %u %s] killed: %s ip %#lx\n", p->pid, p->name,
                exception_name((unsigned)tf->vector), tf->rip);
    process_exit_current(PROCESS_KILLED_STATUS);
}

unsigned process_list(struct sys_process_info *out, unsigned skip, unsigned max)
{
    unsigned n = 0;
    uint64_t f = spin_lock_irqsave(&process_lock);
    struct process *p = processes;
    for (; p && skip; skip--)
        p = p->list_next;
    for (; p && n < max; p = p->list_next, n++) {
        struct sys_process_info *i = &out[n];
        memset(i, 0, sizeof *i);
        i->pid = p->pid;
        i->parent = p->parent;
        i->privileged = p->privileged;
        i->pages = p->as.pages;
        memcpy(i->name, p->name, sizeof i->name);
        struct thread *t = p->thread;
        i->threads = t ? 1 : 0;
        if (p->exited)
            i->state = PROC_ZOMBIE;
        else if (p->suspended)
            i->state = PROC_SUSPENDED;
        else if (t)
            i->state = t->state == T_RUNNING    ? PROC_RUNNING
                       : t->state == T_SLEEPING ? PROC_SLEEPING
                                                : PROC_RUNNABLE;
        if (t) {
            i->cpu = t->cpu < 0 ? 0 : (uint32_t)t->cpu;
            i->cpu_ns = t->cpu_ns;
        }
    }
    spin_unlock_irqrestore(&process_lock, f);
    return n;
}

uint64_t process_live_count(void)
{
    return READ_ONCE(live);
}

bool process_privilege_inherited;

void process_init(void)
{
    process_privilege_inherited = cmdline_has("privileged");
    trap_user_exception_hook = process_fault;
    struct thread *t = thread_create_kernel(reaper);
    if (!t)
        panic("process: no memory for the reaper thread");
    sched_make_runnable(t);
}
