// `profile record` and `profile report`: sampling with call chains into the
// sample log, saved in /tmp, and the reports made from it (docs/profile.md).
#pragma once

int profile_record_main(int argc, char **argv); // argv[1] is "record"
int profile_report_main(int argc, char **argv); // argv[1] is "report"
