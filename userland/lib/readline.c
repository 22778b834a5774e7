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

int readline(const char *prompt, char *buf, size_t size)
{
    if (size == 0)
        return -1;
    size_t len = 0;
    buf[0] = '\0';
    // Walking the history: at == history_count is the line being typed, kept
    // in draft while older lines are shown.
    int at = history_count;
    char draft[LINE_MAX] = "";
    fputs(prompt, stdout);
    fflush(stdout);
    for (;;) {
        int c = getchar();
        if (c == EOF)
            return -1;
        if (c == '\n' || c == '\r') {
            putchar('\n'); // flushes: stdout is line-buffered
            buf[len] = '\0';
            history_add(buf);
            return (int)len;
        }
        if (c == DEL || c == '\b') {
            if (len) {
                buf[--len] = '\0';
                erase(1);
            }
        } else if (c == CTRL('C')) {
            fputs("^C\n", stdout); // abandon the line
            fflush(stdout);
            buf[0] = '\0';
            return 0;
        } else if (c == CTRL('U')) {
            erase(len);
            len = 0;
            buf[0] = '\0';
        } else if (c == ESC) {
            // ESC [ A and ESC [ B (ESC O A/B in application mode); other
            // sequences are read to their final byte and ignored.
            int c1 = getchar();
            if (c1 != '[' && c1 != 'O')
                continue;
            int c2 = getchar();
            while (c2 >= '0' && c2 <= '9') // parameters, as in ESC [ 1 ; 5 A
                c2 = getchar();
            if (c2 == ';')
                while ((c2 = getchar()) >= '0' && c2 <= '9')
                    ;
            if (c2 == 'A' && at > 0) {
                if (at == history_count)
                    strlcpy(draft, buf, sizeof draft);
                len = replace_line(buf, size, len, history_line(--at));
            } else if (c2 == 'B' && at < history_count) {
                at++;
                len = replace_line(buf, size, len, at == history_count ? draft : history_line(at));
            }
        } else if (isprint(c) && len + 1 < size) {
            buf[len++] = (char)c;
            buf[len] = '\0';
            putchar(c);
        }
        fflush(stdout);
    }
}
