// Kernel command-line lookup.
#include "lib/cmdline.h"

#include "lib/string.h"

static char line[256];
static bool test_mode;

void cmdline_init(const char *s)
{
    size_t n = strnlen(s, sizeof line - 1);
    memcpy(line, s, n);
    line[n] = '\0';
    test_mode = cmdline_has("test");
}

bool cmdline_get(const char *key, char *buf, size_t size)
{
    size_t klen = strlen(key);
    for (const char *p = line; *p;) {
        while (*p == ' ')
            p++;
        const char *word = p;
        while (*p && *p != ' ')
            p++;
        size_t wlen = (size_t)(p - word);
        if (wlen >= klen && strncmp(word, key, klen) == 0 && (wlen == klen || word[klen] == '=')) {
            const char *v = wlen == klen ? word + klen : word + klen + 1;
            size_t vlen = (size_t)(p - v);
            if (buf && size) {
                vlen = MIN(vlen, size - 1);
                memcpy(buf, v, vlen);
                buf[vlen] = '\0';
            }
            return true;
        }
    }
    return false;
}

bool cmdline_has(const char *key)
{
    return cmdline_get(key, NULL, 0);
}

bool cmdline_test_mode(void)
{
    return test_mode;
}
