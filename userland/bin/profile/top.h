// `profile top` (top.c): the hottest functions, refreshed on the console.
#pragma once

int profile_top_main(int argc, char **argv);
