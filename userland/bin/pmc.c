// pmc: look at the profiling hardware layer from the shell.
//
//   pmc info                  CPUID leaves decoded, the interface chosen, counters in use
//   pmc trace on|off|clear    record every HAL step and PMU register access (sudo)
//   pmc trace show            print (and drain) what was recorded, every CPU
//   pmc trace CMD [ARGS]      clear, on, run CMD, off, show: what CMD did to the PMU
//
// The trace needs the system-profile privilege. CMD runs with the same
// privilege as pmc itself (so `sudo pmc trace profile run -k x` works).
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define LINE_BYTES   192 // the kernel's longest trace line
#define RING_RECORDS 512 // per CPU (kernel/pmc/pmc_param.h)

static const char usage[] = "usage: pmc info | pmc trace on|off|clear|show | pmc trace CMD [ARGS]";

static int fail(const char *what, NTSTATUS s)
{
    if (s == STATUS_PRIVILEGE_NOT_HELD)
        fprintf(stderr, "pmc: %s needs the system-profile privilege: run it under sudo\n", what);
    else
        fprintf(stderr, "pmc: %s: %s\n", what, nt_status_name(s));
    return 1;
}

// Text from SysPmcInfo or SysPmcTrace(READ) into a buffer sized by the caller.
static int print_text(NTSTATUS s, const char *text, size_t got, const char *what)
{
    if (!NT_SUCCESS(s) && s != STATUS_BUFFER_TOO_SMALL)
        return fail(what, s);
    fwrite(text, 1, got, stdout);
    if (got && text[got - 1] != '\n')
        putchar('\n');
    if (s == STATUS_BUFFER_TOO_SMALL)
        printf("(%s: more than %zu bytes; the rest was dropped)\n", what, got);
    return 0;
}

static int info(void)
{
    size_t cap = 64 * 1024, got = 0;
    char *buf = malloc(cap);
    if (!buf)
        return fail("info", STATUS_NO_MEMORY);
    NTSTATUS s = SysPmcInfo(buf, cap, &got); // before print_text reads got
    int r = print_text(s, buf, got, "info");
    free(buf);
    return r;
}

static int trace_show(void)
{
    struct sys_info si;
    uint32_t ncpus = NT_SUCCESS(SysInfo(&si)) && si.ncpus ? si.ncpus : 1;
    size_t cap = (size_t)ncpus * RING_RECORDS * LINE_BYTES, got = 0;
    char *buf = malloc(cap);
    if (!buf)
        return fail("trace show", STATUS_NO_MEMORY);
    NTSTATUS s = SysPmcTrace(PMC_TRACE_READ, buf, cap, &got);
    int r = print_text(s, buf, got, "trace show");
    if (r == 0 && got == 0)
        printf("(the trace is empty: 'pmc trace on' starts recording)\n");
    free(buf);
    return r;
}

static int trace_op(uint32_t op, const char *what)
{
    NTSTATUS s = SysPmcTrace(op, NULL, 0, NULL);
    return NT_SUCCESS(s) ? 0 : fail(what, s);
}

// clear, on, run, off, show. The command's own exit status is reported, but
// the trace is shown whatever it was.
static int trace_command(char **argv)
{
    if (trace_op(PMC_TRACE_CLEAR, "trace clear") || trace_op(PMC_TRACE_ON, "trace on"))
        return 1;
    int status = 0;
    NTSTATUS s = run_program(argv[0], (const char *const *)argv, SPAWN_PRIVILEGED, &status);
    trace_op(PMC_TRACE_OFF, "trace off");
    if (!NT_SUCCESS(s)) {
        if (s == STATUS_OBJECT_NAME_NOT_FOUND || !program_exists(argv[0]))
            fprintf(stderr, "pmc: %s: no such program\n", argv[0]);
        else
            fprintf(stderr, "pmc: %s: %s\n", argv[0], nt_status_name(s));
        return 1;
    }
    if (status != 0)
        printf("pmc: %s exited with status %d\n", argv[0], status);
    printf("----- pmc trace of '%s' -----\n", argv[0]);
    return trace_show();
}

static int trace(int argc, char **argv)
{
    static const struct {
        const char *name;
        uint32_t op;
    } ops[] = {
        {"on", PMC_TRACE_ON},
        {"off", PMC_TRACE_OFF},
        {"clear", PMC_TRACE_CLEAR},
    };
    if (argc < 3) {
        fprintf(stderr, "pmc: trace what?\n%s\n", usage);
        return 2;
    }
    if (strcmp(argv[2], "show") == 0)
        return argc == 3 ? trace_show() : (fprintf(stderr, "%s\n", usage), 2);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(argv[2], ops[i].name) != 0)
            continue;
        if (argc != 3) {
            fprintf(stderr, "pmc: trace %s takes no arguments\n%s\n", argv[2], usage);
            return 2;
        }
        return trace_op(ops[i].op, argv[2]);
    }
    return trace_command(argv + 2);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "info") == 0)
        return info();
    if (argc >= 2 && strcmp(argv[1], "trace") == 0)
        return trace(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "help") == 0) {
        printf("%s\n", usage);
        return 0;
    }
    fprintf(stderr, "pmc: %s\n%s\n", argc < 2 ? "which command?" : "unknown command", usage);
    return 2;
}
