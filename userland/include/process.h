// Running a program and waiting for it: the common case of SysSpawn.
#pragma once
#include <stdint.h>
#include <syscall.h>

// Spawns path with argv (NULL-terminated, argv[0] the program's name) and
// flags, waits for it to end and closes its handle. *exit_status is set only
// when the result is STATUS_SUCCESS; otherwise the status of the failing call.
NTSTATUS run_program(const char *path, const char *const *argv, uint32_t flags, int *exit_status);

// How a program ended, in the words every tool prints after its name:
// "was interrupted (Ctrl-C)" (EXIT_STATUS_INTERRUPTED), "was killed"
// (EXIT_STATUS_KILLED), else "exited with status N" (lib/abi/syscalls.h).
// buf holds the last form; the result is buf or a constant.
const char *exit_words(int status, char *buf, unsigned size);

// The ramdisk's file names, one per line, in a malloc'd string; NULL on failure.
char *program_list(void);

// Whether the ramdisk holds a file of exactly this name.
int program_exists(const char *name);

// Why spawning prog failed with s, on stderr: "WHO: PROG: MISSING" when the
// ramdisk has no such program, else "WHO: PROG: STATUS_...".
void spawn_failed(const char *who, const char *prog, NTSTATUS s, const char *missing);
