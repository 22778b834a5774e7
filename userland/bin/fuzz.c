// fuzz COUNT SEED [PROCS]: random system calls against the kernel.
//
// The driver spawns PROCS unprivileged children (`fuzz --child COUNT SEED`)
// that together make COUNT calls: every system-call number and a few past the
// end, with arguments drawn from random values, boundaries, kernel addresses,
// unaligned and unmapped pointers, huge sizes, random handles and some valid
// ones. A child the kernel kills (it unmapped its own stack, say) is replaced
// until the count is done. At the end every child has exited and the driver
// checks the kernel's counters: free pages, heap bytes, live objects and
// pinned pages must be back at their baseline. The same SEED gives the same
// calls.
//
// Calls that would only stop the fuzzer are steered away: exiting, killing
// itself, unmapping its own image or stack, reading the console (it would wait
// for a key), long sleeps, writing valid buffers to the console (noise), and
// spawning real programs.
#include <mix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define CALL_ARGS 10 // the most any call takes (NtCreateProfileEx)

uint64_t raw_syscall(uint64_t number, const uint64_t *args);
__asm__(".text\n"
        ".globl raw_syscall\n"
        "raw_syscall:\n" // rdi = number, rsi = args[10]
        "    push %rbx\n"
        "    sub $48, %rsp\n"      // arguments 7-10 go where a C caller's would be:
        "    mov 48(%rsi), %rax\n" // above the return address, at [rsp + 8] when
        "    mov %rax, 8(%rsp)\n"  // `syscall` executes
        "    mov 56(%rsi), %rax\n"
        "    mov %rax, 16(%rsp)\n"
        "    mov 64(%rsi), %rax\n"
        "    mov %rax, 24(%rsp)\n"
        "    mov 72(%rsi), %rax\n"
        "    mov %rax, 32(%rsp)\n"
        "    mov %rdi, %rax\n"
        "    mov (%rsi), %rdi\n"
        "    mov 16(%rsi), %rdx\n"
        "    mov 24(%rsi), %r10\n"
        "    mov 32(%rsi), %r8\n"
        "    mov 40(%rsi), %r9\n"
        "    mov 8(%rsi), %rsi\n"
        "    syscall\n"
        "    add $48, %rsp\n"
        "    pop %rbx\n"
        "    ret\n");

static uint64_t rng;

static uint64_t next(void) // xorshift64*
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

// Buffers the kernel may write through: mapped on their own, so a write the
// fuzzer provokes past their end cannot corrupt its own state (its generator).
#define SCRATCH 8192
static uint8_t *scratch;
static void *heap_block;
static uint64_t good[16]; // values that pass early checks: our handles, a file name, ...
static unsigned ngood;

// One argument: a mix of what kernels get wrong.
static uint64_t argument(void)
{
    static const uint64_t boundary[] = {
        0,
        1,
        2,
        3,
        4,
        7,
        8,
        31,
        32,
        0xFF,
        0xFFFF,
        0x7FFFFFFF,
        0x80000000,
        0xFFFFFFFF,
        0x100000000ull,
        ~0ull,
        ~0ull - 7,
        0x7FFFFFFFFFFFull,
        0x800000000000ull,
        0x00007FFFFFFFF000ull,
        0x00007FFFFFFFEFFFull,
        0xFFFF800000000000ull,
        0xFFFFFFFF80100000ull,
        0xFFFFFFFF80100005ull,
        0x1000,
        0x10000,
        0x400000,
        0x400001,
        0x100000000000ull,
        0x7FFFFFFFFFF0ull,
        1ull << 63,
    };
    switch (next() % 8) {
    case 0: return next();
    case 1:
    case 2: return boundary[next() % (sizeof boundary / sizeof boundary[0])];
    case 3: // a valid pointer, perhaps misaligned, perhaps near the end of the buffer
        return (uint64_t)(scratch + next() % SCRATCH);
    case 4: return (uint64_t)heap_block + next() % 256;
    case 5: // a plausible handle: small multiples of 4, sometimes odd
        return (next() % 40) * ((next() & 1) ? 4 : 1);
    case 6: // a huge or small size
        return (next() & 1) ? next() >> (next() % 64) : next() % 4096;
    default: // something that gets past the first checks, to reach deeper ones
        return ngood ? good[next() % ngood] : next() % 64;
    }
}

static uint64_t succeeded, per_number[SYSCALL_COUNT + 3];
static uint64_t first_call[1 + CALL_ARGS]; // printed: no two children may share it

static void one_call(void)
{
    uint64_t a[CALL_ARGS];
    uint64_t n = next() % (SYSCALL_COUNT + 3); // a few past the end too
    for (int i = 0; i < CALL_ARGS; i++)
        a[i] = argument();
    if (!first_call[0]) {
        first_call[0] = n + 1;
        memcpy(first_call + 1, a, sizeof a);
    }
    switch (n) {
    case SYS_SysExit: return;
    case SYS_SysRead:
        if (a[0] == 0)
            a[0] = 3; // fd 0 would wait for the keyboard
        break;
    case SYS_SysWrite:
        if (a[0] == 1 || a[0] == 2)
            a[1] = 0xFFFF800000000000ull; // only ever a bad buffer to the console
        break;
    case SYS_SysUnmap: // not our own code, data or stack
        if (a[0] < 0x100000000000ull || a[0] >= 0x7FFFFF000000ull)
            a[0] = 0x100000000000ull + (a[0] & 0xFFFFFFFFFull);
        break;
    case SYS_SysSleep: a[0] %= 3; break;
    case SYS_SysIrqoffSpin: // a valid time spins: keep it short, keep the bad ones
        if (a[0] >= 1 && a[0] <= IRQOFF_SPIN_MAX_US)
            a[0] = 1 + a[0] % 20;
        break;
    case SYS_SysKill:
        if (a[0] == SysGetPid())
            a[0] = 0;
        break;
    case SYS_SysSpawn: // a valid name would start real programs (a shell waits for keys)
        if (a[0] >= (uint64_t)scratch && a[0] < (uint64_t)scratch + SCRATCH)
            a[0] = (uint64_t) "no-such-program";
        if (a[0] >= (uint64_t)heap_block && a[0] < (uint64_t)heap_block + 4096)
            a[0] = 0;
        break;
    default: break;
    }
    per_number[n]++;
    uint64_t r = raw_syscall(n, a);
    if (NT_SUCCESS((NTSTATUS)r))
        succeeded++;
}

static int child(uint64_t count, uint64_t seed)
{
    rng = seed; // stream_seed's: never zero
    void *area = NULL;
    if (!NT_SUCCESS(SysMap(&area, SCRATCH + 4096, PROT_READ | PROT_WRITE)))
        return 1;
    scratch = area;
    heap_block = (uint8_t *)area + SCRATCH;
    HANDLE self, prof;
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &self)))
        good[ngood++] = (uint64_t)self;
    if (NT_SUCCESS(NtCreateProfile(&prof, self, (void *)0x400000, 0x10000, 4, (ULONG *)scratch,
                                   SCRATCH, ProfileTime, (KAFFINITY)-1)))
        good[ngood++] = (uint64_t)prof;
    good[ngood++] = (uint64_t) "kernel";
    good[ngood++] = (uint64_t) "fuzz";
    good[ngood++] = 4096;
    good[ngood++] = PROT_READ | PROT_WRITE;
    good[ngood++] = 0x400000;
    good[ngood++] = (uint64_t)scratch; // 16-byte aligned
    good[ngood++] = (uint64_t)(scratch + 4096);
    for (uint64_t i = 0; i < count; i++)
        one_call();
    unsigned numbers = 0;
    for (unsigned i = 0; i < SYSCALL_COUNT + 3; i++)
        numbers += per_number[i] > 0;
    printf("fuzz: pid %u: %lu calls over %u numbers, %lu succeeded; first call %lu(%#lx, %#lx)\n",
           SysGetPid(), count, numbers, succeeded, first_call[0] - 1, first_call[1], first_call[2]);
    return 0;
}

static int driver(uint64_t count, uint64_t seed, unsigned procs)
{
    struct sys_self_check before, after;
    HANDLE warm; // our handle table grows once, on first use: not a leak
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &warm)))
        NtClose(warm);
    SysSelfCheck(&before);
    uint64_t per = count / procs, done = 0, killed = 0, round = 0;
    printf("fuzz: %lu calls from %u processes, seed %lu\n", count, procs, seed);
    while (done < count) {
        HANDLE h[64];
        uint64_t batch[64];
        unsigned started = 0;
        for (unsigned i = 0; i < procs && done < count; i++) {
            char n[24], s[24];
            batch[started] = count - done < per ? count - done : per;
            snprintf(n, sizeof n, "%lu", batch[started]);
            snprintf(s, sizeof s, "%lu", stream_seed(seed, round * 64 + i));
            const char *argv[] = {"fuzz", "--child", n, s, NULL};
            if (!NT_SUCCESS(SysSpawn("fuzz", argv, 0, &h[started]))) {
                printf("fuzz: cannot spawn a child\n");
                return 1;
            }
            done += batch[started++];
        }
        for (unsigned i = 0; i < started; i++) {
            int status = 0;
            SysWait(h[i], &status);
            NtClose(h[i]);
            killed += status == EXIT_STATUS_KILLED;
        }
        round++;
    }
    SysSelfCheck(&after);
    int ok = after.free_pages == before.free_pages && after.heap_bytes == before.heap_bytes &&
             after.live_objects == before.live_objects &&
             after.pinned_pages == before.pinned_pages &&
             after.live_processes == before.live_processes;
    printf("fuzz: %lu calls done, %lu children killed by the kernel (their own doing)\n", done,
           killed);
    printf("fuzz: free pages %lu -> %lu, heap bytes %lu -> %lu, objects %lu -> %lu, "
           "pinned pages %lu -> %lu, processes %lu -> %lu\n",
           before.free_pages, after.free_pages, before.heap_bytes, after.heap_bytes,
           before.live_objects, after.live_objects, before.pinned_pages, after.pinned_pages,
           before.live_processes, after.live_processes);
    printf("fuzz: %s\n", ok ? "no leak" : "LEAK");
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--child") == 0)
        return child(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
    if (argc < 3) {
        printf("usage: fuzz COUNT SEED [PROCS]\n");
        return 2;
    }
    unsigned procs = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 4;
    if (procs < 1 || procs > 64) {
        printf("fuzz: PROCS must be 1..64\n");
        return 2;
    }
    return driver(strtoul(argv[1], NULL, 0), strtoul(argv[2], NULL, 0), procs);
}
