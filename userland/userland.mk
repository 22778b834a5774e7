# The userland: libc, crt0 and every program in userland/bin (a file, or a
# folder for a program of several files), each linked to
# $(BUILD)/userland/<prog> (static ELF64 at 0x400000, symbols kept: the
# profiler and the kernel's fault messages name functions from them).
#
# Included by the top Makefile; also works alone:
#   make -f userland/userland.mk userland            (gcc)
#   make -f userland/userland.mk CC=clang userland
#   make -f userland/userland.mk userland-test       (libc tests on the host)
#
# USER_PROGS lists the built programs, for the ramdisk.

# Included before the top Makefile's first target, this file must not
# become the default goal.
ifneq ($(.DEFAULT_GOAL),)
USER_SAVED_GOAL := $(.DEFAULT_GOAL)
endif

CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
BUILD ?= build
NASM ?= nasm
LD ?= ld
AR ?= ar

USER_OUT := $(BUILD)/userland
USER_OBJ := $(USER_OUT)/obj-$(notdir $(CC))

USER_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -ffreestanding -fno-builtin -nostdlib \
	-fno-pic -fno-pie -fno-stack-protector -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-mno-red-zone -fno-strict-aliasing -fno-asynchronous-unwind-tables -fcf-protection=none \
	-Iuserland/include -iquote kernel -MD -MP
ifeq ($(notdir $(CC)),clang)
USER_CFLAGS += --target=x86_64-unknown-none-elf
else
USER_CFLAGS += -fno-tree-loop-distribute-patterns # memset's own loop must not become a memset call
endif
# Linked by ld itself, which makes a non-PIE ET_EXEC unless told -pie: the
# compiler driver's -no-pie has nothing to do (clang rejects it, unused, under -Werror).
USER_LDFLAGS := -nostdlib -static -z max-page-size=0x1000 -z noexecstack -T userland/user.ld

# libc: the userland's own files plus two kernel files reused as they are
# (kernel/lib/string.c; kernel/lib/kprintf.c whose KERNEL_HOSTED build is vsnprintf only).
USER_LIB_SRC := $(sort $(wildcard userland/lib/*.c)) kernel/lib/string.c kernel/lib/kprintf.c
USER_LIB_OBJ := $(USER_LIB_SRC:%.c=$(USER_OBJ)/%.o)
USER_LIBC    := $(USER_OBJ)/libc.a
USER_CRT0    := $(USER_OBJ)/userland/lib/crt0.o

# A program is one file, userland/bin/NAME.c, or a folder of them,
# userland/bin/NAME/*.c (with its own headers): either way one ELF named NAME.
USER_PROG_DIRS  := $(patsubst userland/bin/%/,%,$(sort $(dir $(wildcard userland/bin/*/*.c))))
USER_PROG_NAMES := $(sort $(basename $(notdir $(wildcard userland/bin/*.c))) $(USER_PROG_DIRS))
USER_PROGS := $(USER_PROG_NAMES:%=$(USER_OUT)/%)
user_prog_src = $(or $(sort $(wildcard userland/bin/$(1)/*.c)),userland/bin/$(1).c)
user_prog_obj = $(patsubst %.c,$(USER_OBJ)/%.o,$(call user_prog_src,$(1)))

.PHONY: userland userland-test
userland: $(USER_PROGS)

$(USER_OBJ)/%.o: %.c userland/userland.mk
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -c $< -o $@

$(USER_OBJ)/kernel/lib/kprintf.o: USER_CFLAGS += -DKERNEL_HOSTED

$(USER_CRT0): userland/lib/crt0.asm
	@mkdir -p $(@D)
	$(NASM) -f elf64 -g -F dwarf $< -o $@

$(USER_LIBC): $(USER_LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# The stamp names the compiler, so switching CC relinks every program.
$(USER_OUT)/.cc-$(notdir $(CC)):
	@mkdir -p $(@D)
	@rm -f $(USER_OUT)/.cc-*
	@touch $@

# One link rule per program: crt0, the program's objects, then the library.
define user_prog_rule
$(USER_OUT)/$(1): $(call user_prog_obj,$(1)) $(USER_CRT0) $(USER_LIBC) userland/user.ld $(USER_OUT)/.cc-$(notdir $(CC))
	$$(LD) $$(USER_LDFLAGS) -o $$@ $$(USER_CRT0) $(call user_prog_obj,$(1)) $$(USER_LIBC)
endef
$(foreach p,$(USER_PROG_NAMES),$(eval $(call user_prog_rule,$(p))))

# Host tests of the pure libc pieces (allocator, strings, numbers, status
# names, line editing, `pmc trace`'s decoder), with ASan and UBSan, under gcc
# and clang.
USER_HOST_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all
USER_HOST_RENAME := $(foreach f,malloc free calloc realloc malloc_stats strtoul strtol atoi \
	strrchr strstr strcpy strncpy strcat strlcpy strdup readline getchar putchar fputs fwrite \
	fflush stdout snprintf vsnprintf SysMap SysUnmap SysWrite isdigit isxdigit isspace isalpha \
	isalnum isupper islower isprint toupper tolower,-D$(f)=ul_$(f))
USER_HOST_LIB := userland/lib/malloc.c userland/lib/string.c userland/lib/strtol.c \
	userland/lib/status.c userland/lib/readline.c userland/lib/ctype.c userland/lib/statfmt.c \
	userland/lib/pmctrace.c kernel/lib/kprintf.c

# The libc files see only userland/include (and rename what glibc also has);
# the test itself sees the host's headers.
USER_HOST_TESTS := userland/tests/test_libc.c userland/tests/test_pmctrace.c

$(USER_OUT)/host/test-%: $(USER_HOST_TESTS) $(USER_HOST_LIB) userland/tests/check.h \
		$(wildcard userland/include/*.h) $(wildcard kernel/lib/abi/*.h) userland/userland.mk
	@mkdir -p $(@D)/$*
	@for src in $(USER_HOST_LIB); do \
		$* $(USER_HOST_CFLAGS) $(USER_HOST_RENAME) -Iuserland/include -iquote kernel \
			-DKERNEL_HOSTED -c $$src -o $(@D)/$*/$$(basename $$src .c).o || exit 1; \
	done
	$* $(USER_HOST_CFLAGS) -iquote kernel -iquote userland/include $(USER_HOST_TESTS) \
		$(patsubst %.c,$(@D)/$*/%.o,$(notdir $(USER_HOST_LIB))) -o $@

userland-test: $(USER_OUT)/host/test-gcc $(USER_OUT)/host/test-clang
	$(USER_OUT)/host/test-gcc && $(USER_OUT)/host/test-clang

-include $(shell find $(USER_OBJ) -name '*.d' 2>/dev/null)

ifdef USER_SAVED_GOAL
.DEFAULT_GOAL := $(USER_SAVED_GOAL)
else ifneq ($(notdir $(firstword $(MAKEFILE_LIST))),userland.mk)
.DEFAULT_GOAL := # included first: the including Makefile's next target is the default
endif
