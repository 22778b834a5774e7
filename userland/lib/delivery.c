// ProfileTime's delivery, read from pmc info's text (delivery.h).
#include <delivery.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define DELIVERY_LINE "ProfileTime delivery: "

bool profile_time_nmi(char *why, size_t size)
{
    size_t cap = 64 * 1024, got = 0;
    char *buf = malloc(cap);
    const char *line = NULL;
    if (buf && NT_SUCCESS(SysPmcInfo(buf, cap - 1, &got))) {
        buf[got < cap ? got : cap - 1] = '\0';
        line = strstr(buf, DELIVERY_LINE);
    }
    const char *text = line ? line + strlen(DELIVERY_LINE) : "pmc info says nothing";
    size_t n = 0;
    while (size && n + 1 < size && text[n] && text[n] != '\n') {
        why[n] = text[n];
        n++;
    }
    if (size)
        why[n] = '\0';
    bool nmi = line && strncmp(text, "NMI", 3) == 0;
    free(buf);
    return nmi;
}
