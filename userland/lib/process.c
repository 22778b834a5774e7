// Running programs from the ramdisk.
#include <nt.h>
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

NTSTATUS run_program(const char *path, const char *const *argv, uint32_t flags, int *exit_status)
{
    HANDLE h;
    NTSTATUS s = SysSpawn(path, argv, flags, &h);
    if (!NT_SUCCESS(s))
        return s;
    int status = 0;
    s = SysWait(h, &status);
    NtClose(h);
    if (NT_SUCCESS(s))
        *exit_status = status;
    return s;
}

const char *exit_words(int status, char *buf, unsigned size)
{
    if (status == EXIT_STATUS_INTERRUPTED)
        return "was interrupted (Ctrl-C)";
    if (status == EXIT_STATUS_KILLED)
        return "was killed";
    snprintf(buf, size, "exited with status %d", status);
    return buf;
}

// SysFileList says how much it needs when the buffer is too small; the list
// may grow between two calls, hence the loop.
char *program_list(void)
{
    size_t cap = 512;
    for (int tries = 0; tries < 4; tries++) {
        char *list = malloc(cap + 1);
        if (!list)
            return NULL;
        size_t needed = 0;
        NTSTATUS s = SysFileList(list, cap, &needed);
        if (NT_SUCCESS(s)) {
            list[needed < cap ? needed : cap] = '\0';
            return list;
        }
        free(list);
        if (needed <= cap)
            return NULL; // failed for another reason than the size
        cap = needed;
    }
    return NULL;
}

int program_exists(const char *name)
{
    char *list = program_list();
    if (!list)
        return 0;
    size_t n = strlen(name);
    int found = 0;
    for (const char *line = list; *line && !found;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        found = len == n && strncmp(line, name, n) == 0;
        line += len + (nl != NULL);
    }
    free(list);
    return found;
}

void spawn_failed(const char *who, const char *prog, NTSTATUS s, const char *missing)
{
    int gone = s == STATUS_OBJECT_NAME_NOT_FOUND || !program_exists(prog);
    fprintf(stderr, "%s: %s: %s\n", who, prog, gone ? missing : nt_status_name(s));
}
