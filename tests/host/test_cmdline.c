// Command-line lookup.
#include <string.h>
#include "lib/cmdline.h"
#include "harness.h"

void test_cmdline(void)
{
    char v[16];
    cmdline_init("  test=boot nosmp  testing=no smp=4");
    CHECK(cmdline_get("test", v, sizeof v) && strcmp(v, "boot") == 0, "cmdline: key=value");
    CHECK(cmdline_has("nosmp") && cmdline_get("nosmp", v, sizeof v) && v[0] == 0,
          "cmdline: bare key");
    CHECK(!cmdline_has("smp=4x") && !cmdline_has("nos") && !cmdline_has("testin"),
          "cmdline: no prefix matches");
    CHECK(cmdline_test_mode(), "cmdline: test mode follows test=");
    char tiny[3];
    CHECK(cmdline_get("testing", tiny, sizeof tiny) && strcmp(tiny, "no") == 0,
          "cmdline: value fits");
    CHECK(cmdline_get("smp", tiny, 2) && strcmp(tiny, "4") == 0,
          "cmdline: value truncated to buffer");
    cmdline_init("");
    CHECK(!cmdline_has("test") && !cmdline_test_mode(), "cmdline: empty line");
}
