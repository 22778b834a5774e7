// What the profile commands share (see profcli.h).
#include <ctype.h>
#include <nt.h>
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <syscall.h>

int prof_load_sources(struct sys_profile_source *out, uint32_t *n)
{
    NTSTATUS s = SysProfileSources(out, ProfileSourceCount, n);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot list the profile sources: %s\n", nt_status_name(s));
        return -1;
    }
    if (*n > ProfileSourceCount)
        *n = ProfileSourceCount;
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

const struct sys_profile_source *prof_find_source(const struct sys_profile_source *sources,
                                                  uint32_t n, const char *text)
{
    uint64_t number;
    int numeric = prof_parse_number(text, &number) == 0;
    for (uint32_t i = 0; i < n; i++)
        if (numeric ? sources[i].source == number : prof_same_source_name(text, sources[i].name))
            return &sources[i];
    return NULL;
}

int prof_parse_number(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    *out = strtoul(text, &end, 0);
    return *end == '\0' ? 0 : -1;
}

int prof_holds_privilege(void)
{
    static struct sys_process_info list[256];
    uint32_t count = 0, me = SysGetPid();
    if (!NT_SUCCESS(SysProcessList(list, 256, &count)))
        return 0;
    for (uint32_t i = 0; i < count && i < 256; i++)
        if (list[i].pid == me)
            return list[i].privileged != 0;
    return 0;
}
