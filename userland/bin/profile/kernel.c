// `profile kernel [options] SECONDS`: profile the kernel's text on every CPU,
// system scope, for SECONDS (needs the system-profile privilege).
#include <clock.h>
#include <stdio.h>
#include <string.h>
#include <syscall.h>
#include "histogram.h"

// The command line: options, then exactly one number of seconds, 1..3600.
static int kernel_parse(int argc, char **argv, struct options *o, uint64_t *seconds)
{
    int st = parse_options(argc, argv, 2, usage_kernel, "g", o);
    if (st)
        return st;
    if (o->first_arg >= argc)
        return usage_error(usage_kernel, "%s", "how many SECONDS?");
    if (o->first_arg + 1 < argc)
        return usage_error(usage_kernel, "unexpected word '%s'", argv[o->first_arg + 1]);
    if (prof_parse_number(argv[o->first_arg], seconds) < 0 || *seconds == 0 || *seconds > 3600)
        return usage_error(usage_kernel, "'%s' is not a number of seconds (1..3600)",
                           argv[o->first_arg]);
    if (!prof_holds_privilege()) {
        fprintf(stderr, "profile: a kernel profile needs the system-profile privilege: "
                        "run 'sudo profile kernel ...'\n");
        return EXIT_FAIL;
    }
    return 0;
}

// One profile per source over the kernel's text, SECONDS of sampling, the reports.
static int kernel_measure(struct options *o, const struct elf_image *img, uint64_t seconds,
                          const char *note)
{
    struct profile ps[MAX_SOURCES];
    int nprof = 0, status = EXIT_FAIL;
    for (; nprof < o->nwant; nprof++)
        if (create_profile(&ps[nprof], NULL, img, "kernel", o->shift, o->want[nprof].iv.src) < 0)
            goto out;
    if (start_all(ps, nprof) < 0)
        goto out;
    uint64_t t0 = clock_ns();
    SysSleep(seconds * 1000); // STATUS_ALERTED on Ctrl-C: the report of what was sampled
    uint64_t elapsed = clock_ns() - t0;
    stop_all(ps, nprof);
    char title[64];
    if (prof_interrupted())
        snprintf(title, sizeof title, "kernel, %lu.%03lu s of %lu (Ctrl-C), every CPU",
                 elapsed / 1000000000, elapsed / 1000000 % 1000, seconds);
    else
        snprintf(title, sizeof title, "kernel, %lu s, every CPU", seconds);
    report_all(o, ps, 1, title, elapsed, note);
    status = 0;
out:
    for (int i = 0; i < nprof; i++)
        close_profile(&ps[i]);
    return status;
}

int cmd_kernel(int argc, char **argv)
{
    struct options o;
    uint64_t seconds;
    int st = kernel_parse(argc, argv, &o, &seconds);
    if (st)
        return st;
    static struct elf_image kernel_img;
    NTSTATUS s = elf_image_load("kernel", &kernel_img);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: kernel: cannot read its ELF symbols: %s\n", nt_status_name(s));
        return EXIT_FAIL;
    }
    char note[128];
    st = set_intervals(&o, 1, note, sizeof note);
    if (!st)
        st = kernel_measure(&o, &kernel_img, seconds, note);
    restore_intervals(&o);
    elf_image_free(&kernel_img);
    return st;
}
