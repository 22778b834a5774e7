// Line input with editing on the raw console: printable characters echo,
// backspace (0x7F or 0x08) erases, ctrl-U kills the line, the up and down
// arrows (ESC [ A, ESC [ B) walk the history of earlier lines, ctrl-C
// abandons the line (an empty result), Enter ends.
#pragma once
#include <stddef.h>

// Prints prompt, reads one line into buf (at most size - 1 characters, always
// terminated, without the newline) and returns its length; -1 when the
// console cannot be read; READLINE_TOO_LONG when the line had more than
// size - 1 characters (read to its end, the rest not kept, not echoed, and
// not in the history). Non-empty lines join the history.
#define READLINE_TOO_LONG (-2)
int readline(const char *prompt, char *buf, size_t size);
