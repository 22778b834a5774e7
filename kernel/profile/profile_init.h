// The profile layer's start at boot (profile_init.c).
#pragma once

void profile_init(void);
