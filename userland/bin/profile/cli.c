// What the profile subcommands share (see cli.h).
#include <ctype.h>
#include <nt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"

const char usage_all[] =
    "usage: profile sources | run ... | kernel ... | stat ... | record ... | report ... | top ... "
    "| offcpu ... | help";
const char usage_sources[] = "usage: profile sources";
const char usage_run[] = "usage: profile run [-s SOURCE[:INTERVAL]]... [-i INTERVAL] [-b "
                         "BUCKETSHIFT] [-k] [-n TOP] [-g] (PROG [ARGS] | -p PID [-d SECONDS])";
const char usage_kernel[] = "usage: profile kernel [-s SOURCE[:INTERVAL]]... [-i INTERVAL] "
                            "[-b BUCKETSHIFT] [-n TOP] [-g] SECONDS";
const char usage_record[] =
    "usage: profile record [-g] [-s SOURCE[:u|:k]] [-i INTERVAL] [-k] [-a] [-o FILE | --host] "
    "[-r RINGKB] "
    "[-d DEPTH] (PROG [ARGS] | -a SECONDS | -p PID [-d SECONDS])";
const char usage_report[] =
    "usage: profile report [--folded | --export | --host] [--sort pid,cpu] [-n TOP] [FILE]";
const char usage_stat[] = "usage: profile stat [-e EVENT[:u|:k],...] [-a] [-r N] [--per-cpu] (PROG "
                          "[ARGS...] | -p PID [-d "
                          "SECONDS])";
const char usage_cswitch_record[] = "usage: profile record (--cswitch | --pmc-events HOOK,...) [-e "
                                    "EVENT,...] PROG [ARGS...]";
const char usage_cswitch_report[] = "usage: profile report --cswitch [--json] [-n LINES]";

int usage_say(const char *usage, const char *tail, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "profile: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (tail) {
        fprintf(stderr, "\n%s%s\n", usage, tail);
        return EXIT_USAGE;
    }
    // The command is the word after "usage: profile ".
    const char *cmd = usage + strlen("usage: profile ");
    const char *end = strchr(cmd, ' ');
    int len = end ? (int)(end - cmd) : (int)strlen(cmd);
    fprintf(stderr, "\n%s (see 'profile help %.*s')\n", usage, len, cmd);
    return EXIT_USAGE;
}

char *join_words(int argc, char *const *argv)
{
    size_t size = 1;
    for (int i = 0; i < argc; i++)
        size += strlen(argv[i]) + 1;
    char *out = malloc(size);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if (i)
            strlcpy(out + strlen(out), " ", size - strlen(out));
        strlcpy(out + strlen(out), argv[i], size - strlen(out));
    }
    return out;
}

int argv_has(int argc, char **argv, const char *word)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], word) == 0)
            return 1;
    return 0;
}

int argv_take(int *argc, char **argv, const char *word)
{
    int found = 0, k = 2;
    for (int i = 2; i < *argc; i++) {
        if (!strcmp(argv[i], word))
            found = 1;
        else
            argv[k++] = argv[i];
    }
    *argc = k;
    argv[k] = NULL;
    return found;
}

// ---------------------------------------------------------------------------
// Sources.

struct sys_profile_source prof_sources[ProfileSourceCount];
uint32_t prof_nsources;

int prof_load_sources(void)
{
    NTSTATUS s = SysProfileSources(prof_sources, ProfileSourceCount, &prof_nsources);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot list the profile sources: %s\n", nt_status_name(s));
        return -1;
    }
    if (prof_nsources > ProfileSourceCount)
        prof_nsources = ProfileSourceCount;
    return 0;
}

int prof_same_source_name(const char *a, const char *b)
{
    static const char prefix[] = "profile";
    const char *both[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        size_t i = 0;
        while (prefix[i] && tolower((unsigned char)both[k][i]) == prefix[i])
            i++;
        if (!prefix[i] && both[k][i])
            both[k] += i;
    }
    for (a = both[0], b = both[1]; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const struct sys_profile_source *prof_find_source(const char *text)
{
    uint64_t number;
    if (prof_parse_number(text, &number) == 0)
        return prof_source_row(number < UINT32_MAX ? (uint32_t)number : UINT32_MAX);
    for (uint32_t i = 0; i < prof_nsources; i++)
        if (prof_same_source_name(text, prof_sources[i].name))
            return &prof_sources[i];
    return NULL;
}

const struct sys_profile_source *prof_source_row(uint32_t source)
{
    for (uint32_t i = 0; i < prof_nsources; i++)
        if (prof_sources[i].source == source)
            return &prof_sources[i];
    return NULL;
}

int prof_parse_number(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    *out = strtoul(text, &end, 0);
    if (*end)
        return -1;
    // strtoul saturates at UINT64_MAX on overflow; no option takes that value.
    return *out == UINT64_MAX ? PROF_NUMBER_TOO_LARGE : 0;
}

int number_error(const char *usage, const char *option, const char *text, const char *wants)
{
    uint64_t v;
    if (prof_parse_number(text, &v) == PROF_NUMBER_TOO_LARGE)
        return usage_error(usage, "%s '%s': out of range (too large for 64 bits)", option, text);
    return usage_error(usage, "%s wants %s, not '%s'", option, wants, text);
}

// ---------------------------------------------------------------------------
// Intervals.

// Why the interval wanted cannot be had; EXIT_FAIL, or 0 with a note when
// keeping the one in force will do.
static int cannot_set(const struct interval *iv, int privileged, NTSTATUS st, char *note,
                      size_t note_size)
{
    const struct sys_profile_source *s = iv->src;
    if (privileged) {
        fprintf(stderr, "profile: cannot set %s's interval to %lu: %s\n", s->name, iv->want,
                nt_status_name(st));
        return EXIT_FAIL;
    }
    if (iv->asked) {
        fprintf(stderr,
                "profile: setting %s's interval needs the system-profile "
                "privilege (run under sudo); the interval in force is %u\n",
                s->name, (ULONG)iv->in_force);
        return EXIT_FAIL;
    }
    snprintf(note, note_size, "interval %u in force (the default %lu needs sudo to set)",
             (ULONG)iv->in_force, iv->want);
    return 0;
}

int interval_set(struct interval *iv, int privileged, int may_keep, char *note, size_t note_size)
{
    const struct sys_profile_source *s = iv->src;
    ULONG now = 0;
    NtQueryIntervalProfile((KPROFILE_SOURCE)s->source, &now);
    iv->previous = iv->in_force = now;
    iv->changed = 0;
    if (iv->want < s->min_interval || iv->want > s->max_interval) {
        fprintf(stderr, "profile: interval %lu is outside %s's range %lu..%lu %s\n", iv->want,
                s->name, s->min_interval, s->max_interval, s->units);
        return EXIT_USAGE;
    }
    if (iv->want == now)
        return 0;
    NTSTATUS st = STATUS_PRIVILEGE_NOT_HELD;
    if (privileged)
        st = NtSetIntervalProfile((ULONG)iv->want, (KPROFILE_SOURCE)s->source);
    if (!NT_SUCCESS(st))
        return may_keep ? 0 : cannot_set(iv, privileged, st, note, note_size);
    iv->changed = 1;
    NtQueryIntervalProfile((KPROFILE_SOURCE)s->source, &now);
    iv->in_force = now;
    return 0;
}

void interval_restore(const struct interval *iv)
{
    if (iv->changed)
        NtSetIntervalProfile((ULONG)iv->previous, (KPROFILE_SOURCE)iv->src->source);
}

// ---------------------------------------------------------------------------
// Processes.

uint32_t prof_process_list(const struct sys_process_info **rows)
{
    static struct sys_process_info list[256];
    uint32_t count = 0;
    *rows = list;
    if (!NT_SUCCESS(SysProcessList(list, 256, &count)))
        return 0;
    return count < 256 ? count : 256;
}

const char note_approximate_time[] =
    "Note: time sampling under QEMU without -icount follows the host's scheduling of the vCPUs "
    "and is approximate; boot with `make run ICOUNT=1` (QEMU -icount shift=0,sleep=off) for "
    "exact, repeatable shares.\n";

int prof_time_approximate(void)
{
    struct sys_info info;
    return NT_SUCCESS(SysInfo(&info)) && info.time_sampling_approximate;
}

int prof_interrupted(void)
{
    static int seen;
    uint32_t pending = 0;
    if (NT_SUCCESS(SysInterruptMode(INTERRUPT_NOTIFY, &pending)) && pending)
        seen = 1;
    return seen;
}

NTSTATUS prof_wait(HANDLE child, int *exit_status)
{
    for (;;) {
        NTSTATUS s = SysWait(child, exit_status);
        if (s != STATUS_ALERTED)
            return s;
        prof_interrupted();
    }
}

int prof_exited(uint32_t pid)
{
    const struct sys_process_info *list;
    uint32_t count = prof_process_list(&list);
    for (uint32_t i = 0; i < count; i++)
        if (list[i].pid == pid)
            return list[i].state == PROC_ZOMBIE;
    return 1;
}

int prof_holds_privilege(void)
{
    const struct sys_process_info *list;
    uint32_t count = prof_process_list(&list), me = SysGetPid();
    for (uint32_t i = 0; i < count; i++)
        if (list[i].pid == me)
            return list[i].privileged != 0;
    return 0;
}
