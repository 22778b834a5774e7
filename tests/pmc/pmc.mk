# Hosted tests of kernel/pmc against the register-level PMU model.
#
# Included by the top Makefile; also usable alone:
#   make -f tests/pmc/pmc.mk test-pmc-host
# Builds the real kernel/pmc/hal/*.c (and kernel/pmc/hwpmc/*.c, the counting
# PMCs above them, with tests/pmc/ke_host.c standing in for the processes and
# the scheduler; kernel/lib/ring.c, the trace's rings) with the model and
# tests, once with each compiler in PMC_HOST_CCS, under ASan and UBSan, and
# runs them. Full TAP output is kept in build/tests/pmc/<compiler>.tap.
#
# Kernel headers are found with -iquote kernel rather than -Ikernel so that the
# test code's <string.h> and <stdio.h> are the C library's, not kernel/lib/string.h.

PMC_BUILD ?= $(or $(BUILD),build)/tests/pmc
PMC_HOST_CCS ?= gcc clang
PMC_HOST_CFLAGS := -std=c11 -O1 -Wall -Wextra -Werror -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=all -DKERNEL_HOSTED -iquote kernel
PMC_KERNEL_SRCS := $(wildcard kernel/pmc/hal/*.c) kernel/pmc/hwpmc/pmc.c kernel/pmc/hwpmc/admin.c kernel/pmc/hwpmc/kind_counting.c kernel/pmc/hwpmc/kind_sampling.c kernel/pmc/hwpmc/loggers.c \
    kernel/lib/ring.c
PMC_TEST_SRCS := $(wildcard tests/pmc/*.c)
PMC_HOST_DEPS := $(PMC_KERNEL_SRCS) $(PMC_TEST_SRCS) $(wildcard kernel/pmc/*/*.h) \
    $(wildcard tests/pmc/*.h) $(wildcard kernel/*/*.h) $(wildcard kernel/arch/x86/*.h) \
    tests/pmc/pmc.mk
PMC_HOST_BINS := $(foreach cc,$(PMC_HOST_CCS),$(PMC_BUILD)/pmc_test.$(cc))

# The freestanding flags the kernel uses, to check kernel/pmc alone.
PMC_KERNEL_CFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -Ikernel -ffreestanding -fno-pic \
    -fno-pie -mno-red-zone -mcmodel=kernel -mgeneral-regs-only -fno-stack-protector \
    -fno-omit-frame-pointer -nostdlib

$(PMC_BUILD)/pmc_test.%: $(PMC_HOST_DEPS)
	@mkdir -p $(@D)
	$* $(PMC_HOST_CFLAGS) -o $@ $(PMC_KERNEL_SRCS) $(PMC_TEST_SRCS)

# build/cpuid-replay FILE...: detection over AIDA64 CPUID dumps
# (tests/cpuid-replay/replay.c), on the same sources and model.
CPUID_REPLAY := $(or $(BUILD),build)/cpuid-replay
CPUID_REPLAY_SRCS := $(PMC_KERNEL_SRCS) tests/pmc/pmu_model.c tests/pmc/ke_host.c tests/pmc/tap.c \
    tests/cpuid-replay/replay.c
$(CPUID_REPLAY): $(PMC_HOST_DEPS) tests/cpuid-replay/replay.c
	@mkdir -p $(@D)
	gcc $(PMC_HOST_CFLAGS) -iquote tests/pmc -o $@ $(CPUID_REPLAY_SRCS)
.PHONY: cpuid-replay
cpuid-replay: $(CPUID_REPLAY)

# One KTAP line per compiler (a failed check's lines follow as # diagnostics),
# then "N passed, N failed" over every check.
.PHONY: test-pmc-host check-pmc-freestanding
test-pmc-host: $(PMC_HOST_BINS)
	@status=0; passed=0; failed=0; n=0; \
	for bin in $(PMC_HOST_BINS); do \
	    n=$$((n + 1)); cc=$${bin##*.}; \
	    $$bin > $$bin.tap 2>&1; rc=$$?; \
	    last=$$(tail -n 1 $$bin.tap); \
	    case "$$last" in \
	    *" passed, "*" failed") p=$${last%% passed*}; f=$${last##*, }; f=$${f%% failed*};; \
	    *) p=0; f=1; tail -n 20 $$bin.tap | sed 's/^/# /';; esac; \
	    passed=$$((passed + p)); failed=$$((failed + f)); \
	    if [ $$rc -eq 0 ] && [ $$f -eq 0 ]; then \
	        echo "ok $$n - pmc-model/$$cc: $$p checks passed ($$bin.tap)"; \
	    else \
	        status=1; grep -A3 '^not ok' $$bin.tap | sed 's/^/# /'; \
	        echo "not ok $$n - pmc-model/$$cc: $$last, exit status $$rc ($$bin.tap)"; \
	    fi; \
	done; \
	echo "$$passed passed, $$failed failed"; exit $$status

check-pmc-freestanding:
	@mkdir -p $(PMC_BUILD)/freestanding
	@for cc in $(PMC_HOST_CCS); do for f in $(PMC_KERNEL_SRCS); do \
	    $$cc $(PMC_KERNEL_CFLAGS) -c $$f -o $(PMC_BUILD)/freestanding/$$cc-$$(basename $$f .c).o \
	    || exit 1; done; echo "kernel/pmc compiles freestanding with $$cc"; done

# make pmu-explore: the stateful explorer of the PMU layer (tests/pmc/explore):
# seeded random sequences of what users and the kernel do, on every model
# variant, with NMIs injected at the code's MSR accesses, checked against a
# reference after every step. SEQS=N sequences (default 100000) from SEED=S;
# VARIANT=NAME keeps to one variant; REPLAY='TEXT' runs a printed failure
# again, step by step. Built as the other host tests are, under ASan and
# UBSan; build/tests/pmc/pmu-explore.<compiler> for gcc and clang.
PMU_EXPLORE_SRCS := $(PMC_KERNEL_SRCS) tests/pmc/pmu_model.c tests/pmc/ke_host.c tests/pmc/tap.c \
    tests/pmc/test_util.c $(wildcard tests/pmc/explore/*.c)
PMU_EXPLORE_CFLAGS := $(subst -O1,-O2,$(PMC_HOST_CFLAGS)) -iquote tests/pmc
SEQS ?= 100000
SEED ?= 1
$(PMC_BUILD)/pmu-explore.%: $(PMC_HOST_DEPS) $(wildcard tests/pmc/explore/*)
	@mkdir -p $(@D)
	$* $(PMU_EXPLORE_CFLAGS) -o $@ $(PMU_EXPLORE_SRCS)
.PHONY: pmu-explore
pmu-explore: $(PMC_BUILD)/pmu-explore.gcc
	@$(PMC_BUILD)/pmu-explore.gcc --seqs $(SEQS) --seed $(SEED) $(if $(VARIANT),--variant $(VARIANT)) \
	    $(if $(REPLAY),--replay '$(REPLAY)')
