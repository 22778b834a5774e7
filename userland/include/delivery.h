// How ProfileTime reaches the CPU here: as an NMI (boot option profile_nmi=1
// where the machine allows it) or as a maskable interrupt; from `pmc info`'s
// text (SysPmcInfo).
#pragma once
#include <stdbool.h>
#include <stddef.h>

// True when ProfileTime is delivered as NMI. why[size] gets the rest of
// pmc info's "ProfileTime delivery: " line (what, and the reason), or a
// sentence saying the text had no such line.
bool profile_time_nmi(char *why, size_t size);
