// The PMC layer's start at boot (hwpmc/hwpmc_init.c).
#pragma once

void hwpmc_init(void);
