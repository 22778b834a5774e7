// pmc_text_put: vsnprintf at the end of what is already there.
#include <stdarg.h>
#include "lib/kprintf.h"
#include "pmc/text.h"

void pmc_text_put(struct pmc_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)t->len < t->size ? (size_t)t->len : t->size;
    int n = t->buf ? vsnprintf(t->buf + at, t->size - at, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += n;
}
