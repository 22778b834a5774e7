// profile's counting commands (userland/lib/profstat.c); argv[1] is the command.
#pragma once

int profile_stat_main(int argc, char **argv);   // profile stat
int profile_record_main(int argc, char **argv); // profile record --cswitch
int profile_report_main(int argc, char **argv); // profile report --cswitch
