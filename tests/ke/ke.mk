# make ke-explore: the stateful explorer of the profile layer (tests/ke, kx.h
# says what it models): the real kernel/pmc/ke sources, core/grace.c,
# core/object.c and core/switch_publish.h's steps on 2 to 4 simulated CPUs,
# samples suspended between any two of their loads while other CPUs run,
# built for the host under ASan and UBSan as the other host tests are.
# SEQS=N sequences (default 100000) from SEED=S; REPLAY='TEXT' runs a printed
# failure again, step by step. build/tests/ke/ke-explore.<compiler> for gcc
# and clang.
KE_BUILD := $(or $(BUILD),build)/tests/ke
KE_KERNEL_SRCS := kernel/pmc/ke/sample.c kernel/pmc/ke/plan_epoch.c kernel/pmc/ke/profile.c kernel/pmc/ke/profile_index.c \
    kernel/pmc/ke/profile_tree.c \
    kernel/core/grace.c kernel/core/object.c
KE_EXPLORE_SRCS := $(KE_KERNEL_SRCS) $(wildcard tests/ke/*.c)
KE_EXPLORE_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=all -DKERNEL_HOSTED -iquote kernel

$(KE_BUILD)/ke-explore.%: $(KE_EXPLORE_SRCS) $(wildcard tests/ke/*.h) tests/xorshift.h \
    $(wildcard kernel/*/*.h kernel/pmc/*/*.h kernel/arch/x86/*.h) tests/ke/ke.mk
	@mkdir -p $(@D)
	$* $(KE_EXPLORE_CFLAGS) -o $@ $(KE_EXPLORE_SRCS)

.PHONY: ke-explore
ke-explore: $(KE_BUILD)/ke-explore.gcc
	@$(KE_BUILD)/ke-explore.gcc --seqs $(or $(SEQS),100000) --seed $(or $(SEED),1) \
	    $(if $(REPLAY),--replay '$(REPLAY)')
