// Line input with editing and history on the raw console.
//
// The kernel does not echo: every character the user should see is written
// here. Editing happens at the end of the line only (no cursor movement),
// which keeps redrawing to "erase n characters, print the new ones".
#include <ctype.h>
#include <readline.h>
#include <stdio.h>
#include <string.h>

#define HISTORY  32  // lines remembered
#define LINE_MAX 256 // longest remembered line, terminator included

#define CTRL(c) ((c)&0x1F)
#define ESC     0x1B
#define DEL     0x7F

// A ring: the newest line is history[(first + count - 1) % HISTORY].
static char history[HISTORY][LINE_MAX];
static int history_first, history_count;

static char *history_line(int i) // 0 the oldest
{
    return history[(history_first + i) % HISTORY];
}

static void history_add(const char *line)
{
    if (!*line || (history_count && strcmp(history_line(history_count - 1), line) == 0))
        return;
    if (history_count == HISTORY) {
        history_first = (history_first + 1) % HISTORY;
        history_count--;
    }
    strlcpy(history_line(history_count++), line, LINE_MAX);
}

static void erase(size_t n)
{
    while (n--)
        fputs("\b \b", stdout);
}

// Replaces the visible line (len characters) by text.
static size_t replace_line(char *buf, size_t size, size_t len, const char *text)
{
    erase(len);
    len = strlcpy(buf, text, size);
    if (len >= size)
        len = size - 1;
    fwrite(buf, 1, len, stdout);
    return len;
}

// After an ESC: 'A' or 'B' for the up and down arrows (ESC [ A, or ESC O A
// in application mode, or with parameters as in ESC [ 1 ; 5 A). Other
// sequences are read to their final byte and ignored: 0.
static int read_arrow(void)
{
    int c1 = getchar();
    if (c1 != '[' && c1 != 'O')
        return 0;
    int c2 = getchar();
    while (c2 >= '0' && c2 <= '9') // parameters
        c2 = getchar();
    if (c2 == ';')
        while ((c2 = getchar()) >= '0' && c2 <= '9')
            ;
    return c2 == 'A' || c2 == 'B' ? c2 : 0;
}

// The line being edited. Walking the history: at == history_count is the
// line being typed, kept in draft while older lines are shown.
struct line {
    char *buf;
    size_t size, len;
    int at;
    char draft[LINE_MAX];
};

// Up ('A'): the line before in the history; down ('B'): the one after.
static void history_walk(struct line *l, int arrow)
{
    if (arrow == 'A' && l->at > 0) {
        if (l->at == history_count)
            strlcpy(l->draft, l->buf, sizeof l->draft);
        l->len = replace_line(l->buf, l->size, l->len, history_line(--l->at));
    } else if (arrow == 'B' && l->at < history_count) {
        l->at++;
        l->len = replace_line(l->buf, l->size, l->len,
                              l->at == history_count ? l->draft : history_line(l->at));
    }
}

int readline(const char *prompt, char *buf, size_t size)
{
    if (size == 0)
        return -1;
    struct line l = {.buf = buf, .size = size, .at = history_count};
    int too_long = 0;
    buf[0] = '\0';
    fputs(prompt, stdout);
    fflush(stdout);
    for (;;) {
        int c = getchar();
        if (c == EOF)
            return -1;
        if (c == '\n' || c == '\r') {
            putchar('\n'); // flushes: stdout is line-buffered
            buf[l.len] = '\0';
            if (too_long)
                return READLINE_TOO_LONG;
            history_add(buf);
            return (int)l.len;
        }
        if (c == DEL || c == '\b') {
            if (l.len) {
                buf[--l.len] = '\0';
                erase(1);
            }
        } else if (c == CTRL('C')) {
            fputs("^C\n", stdout); // abandon the line
            fflush(stdout);
            buf[0] = '\0';
            return 0;
        } else if (c == CTRL('U')) {
            too_long = 0;
            erase(l.len);
            l.len = 0;
            buf[0] = '\0';
        } else if (c == ESC) {
            history_walk(&l, read_arrow());
        } else if (isprint(c) && l.len + 1 < size) {
            buf[l.len++] = (char)c;
            buf[l.len] = '\0';
            putchar(c);
        } else if (isprint(c)) {
            too_long = 1;
        }
        fflush(stdout);
    }
}
