// The profile layer's start at boot (ke/profile_init.c).
#pragma once

void profile_init(void);
