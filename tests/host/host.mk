# Host unit tests: pure kernel code compiled for the host with ASan and UBSan,
# once with gcc and once with clang. Included by the top Makefile.
HOST_TEST_SRC := tests/host/hosted.c tests/host/test_kprintf.c tests/host/test_pmm.c \
	tests/host/test_multiboot2.c tests/host/test_acpi.c tests/host/test_cmdline.c \
	tests/host/test_profile_index.c tests/host/test_ring.c tests/host/test_lapic.c \
	tests/host/test_callchain.c tests/host/test_object.c \
	kernel/lib/kprintf.c kernel/core/pmm.c kernel/lib/multiboot2.c kernel/lib/acpi.c kernel/lib/cmdline.c \
	kernel/pmc/ke/profile_index.c kernel/pmc/ke/profile_tree.c kernel/lib/ring.c kernel/arch/x86/lapic.c kernel/pmc/hwpmc/callchain.c \
	kernel/core/object.c
# -mno-red-zone: hwpmc/callchain.c's user walk calls an assembly routine from inline
# asm; -no-pie: user_peek's fault-fixup table holds absolute addresses.
HOST_TEST_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer -mno-red-zone \
	-fno-pie \
	-fsanitize=address,undefined -fno-sanitize-recover=all -DKERNEL_HOSTED -iquote kernel -iquote tests/host

# kprintf.c is built whole (its kprintf too, which the other files' hosted
# builds leave out): the tests give it a console on stdout.
build/tests/host/unit-%: $(HOST_TEST_SRC) $(wildcard kernel/*/*.h kernel/arch/x86/*.h tests/host/*.h)
	@mkdir -p $(@D)
	$* $(HOST_TEST_CFLAGS) -UKERNEL_HOSTED -c kernel/lib/kprintf.c -o $(@D)/kprintf-$*.o
	$* $(HOST_TEST_CFLAGS) -no-pie $(filter-out kernel/lib/kprintf.c,$(HOST_TEST_SRC)) $(@D)/kprintf-$*.o \
		-pthread -o $@

.PHONY: test-host
test-host: build/tests/host/unit-gcc build/tests/host/unit-clang
	@build/tests/host/unit-gcc && build/tests/host/unit-clang
