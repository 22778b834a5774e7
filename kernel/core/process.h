// Processes: an address space, one thread, a handle table, a privilege flag.
//
// A process is a kernel object. References are held by its running thread
// (until it exits) and by handles; it stays in the process list, as a zombie
// after exit, until the last reference goes.
#pragma once
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"

#include "core/addrspace.h"
#include "core/handle.h"
#include "core/object.h"
#include "core/sched.h"

#define PROCESS_KILLED_STATUS EXIT_STATUS_KILLED

struct process {
    struct object obj;
    uint32_t pid, parent;
    char name[PROCESS_NAME_MAX];
    struct addrspace as;
    struct thread *thread;
    struct handle_table handles;
    bool privileged;      // holds the system-profile privilege
    volatile bool killed; // exit at the next return to ring 3
    volatile bool exited;
    bool suspended; // created with SPAWN_SUSPENDED, not yet resumed
    int exit_status;
    int kill_status;           // the exit status a kill gives (SysKill's or Ctrl-C's)
    uint32_t pgid;             // process group (lib/abi/syscalls.h: console interrupts)
    bool interrupt_notify;     // INTERRUPT_NOTIFY: a console interrupt sets alerted
    volatile bool alerted;     // a console interrupt is pending (INTERRUPT_NOTIFY)
    struct process *list_next; // all processes (process_lock)
    struct process *gone_next; // its thread gone, awaiting the reaper (process_lock)
    void *layer_area;          // the upper layer's per-process state (process_area_reserve)
};

// The layer above the processes (profile objects and PMCs) keeps its state
// of each process in an area allocated, zeroed, with the process: it says the
// size once at boot, before the first process, and reaches the area with
// process_area. A process never names what the area holds.
void process_area_reserve(size_t bytes);
static inline void *process_area(const struct process *p)
{
    return p->layer_area;
}

// Watchers: the layers above (profile objects, the PMC log, the boot code's
// init) learn of a process's life without the process code naming them. Each
// is called with interrupts on (notify asserts it), so it may allocate; the
// first three, boot code aside, in a thread that may also sleep (take a
// mutex, spawn a process):
//   PROCESS_SPAWNED    created and loaded, not yet running; called by the
//                      spawning thread (process_current() is the parent)
//   PROCESS_EXITING    called by the exiting thread itself, its handles
//                      closed, its address space not yet freed; exit_status set
//   PROCESS_EXITED     its last thread is gone; called by the reaper, a kernel
//                      thread (process_current() is NULL, so what it spawns
//                      has no parent, as at boot), before a waiter can see it
//                      exited (the thread's reference still holds p). Exits
//                      are told one at a time, in order: a watcher must not
//                      wait for another process's exit
//   PROCESS_DESTROYED  the last reference is going: free what hangs on p;
//                      called where it is dropped, perhaps a grace-period
//                      function (core/grace.h), which must not sleep
enum process_event { PROCESS_SPAWNED, PROCESS_EXITING, PROCESS_EXITED, PROCESS_DESTROYED };
typedef void (*process_watcher)(struct process *p, enum process_event event);
#define PROCESS_WATCHERS 4
void process_watch(process_watcher fn); // at boot, before the first process
// Called on each ring-3 page fault while set (the profile layer's trace
// loggers): demand_zero for a demand-zero page now present, false for a
// fault that kills the process. In the fault's context, interrupts as they are.
extern void (*process_fault_hook)(bool demand_zero);

// Create a process running the ramdisk program path with argv; suspended if
// flags has SPAWN_SUSPENDED. On success *out holds a reference for the caller.
NTSTATUS process_spawn(const char *path, const char *const *argv, int argc, uint32_t flags,
                       uint32_t parent, bool privileged, struct process **out);
void process_resume(struct process *p);
// Whether me may act on target (kill it, open it, profile or count it): it is
// itself, its child, or me holds the privilege. me NULL: the kernel, always.
static inline bool process_may_control(const struct process *me, const struct process *target)
{
    return !me || me->privileged || target == me || target->parent == me->pid;
}
NTSTATUS process_kill(uint32_t pid);
// A console interrupt for every process of group pgid: each in INTERRUPT_END
// mode is killed with EXIT_STATUS_INTERRUPTED, each in INTERRUPT_NOTIFY mode
// gets its alerted flag set; a sleeping one is woken. Any context, an
// interrupt handler's included.
void process_interrupt_group(uint32_t pgid);
// Whether me may make pgid the console's foreground group (lib/abi/syscalls.h):
// STATUS_SUCCESS, STATUS_INVALID_CID or STATUS_ACCESS_DENIED.
NTSTATUS process_group_check(const struct process *me, uint32_t pgid);
// Until p exits, the caller is killed, or its alerted flag is set (then
// p->exited is still false); returns the exit status.
int process_wait(struct process *p);
void NORETURN process_exit_current(int status);
// The scheduler, after the thread's stack is freed (any context where a
// spinlock may be taken): the reaper tells PROCESS_EXITED, then marks p exited.
void process_thread_gone(struct process *p);
struct process *process_current(void);
struct process *process_by_pid(uint32_t pid); // a new reference, or NULL
// Up to max entries of the process list, after skipping the first skip.
unsigned process_list(struct sys_process_info *out, unsigned skip, unsigned max);
uint64_t process_live_count(void);
void process_init(void);
// Boot option `privileged`: a privileged process's children are privileged too
// (so everything started from the shell may profile the system, no sudo).
extern bool process_privilege_inherited;
// A one-line report for a program killed by an exception.
void process_fault(struct trapframe *tf);
