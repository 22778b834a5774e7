// profile's counting commands (userland/lib/profstat.c); argv[1] is the command.
#pragma once

int profile_stat_main(int argc, char **argv); // profile stat
// profile record --cswitch and profile report --cswitch (profile record and
// report hand these over when they see --cswitch: lib/profrecord.c).
int profile_cswitch_record_main(int argc, char **argv);
int profile_cswitch_report_main(int argc, char **argv);
