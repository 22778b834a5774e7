# Build, boot and test the kernel. `make help` lists the targets.
#
#   make run        build, then boot to the serial console in this terminal
#                   (SMP=2 for the lessons' figures, LOG=FILE keeps the console in FILE too)
#   make test       every test (host unit tests, hosted pmc tests, QEMU boots)
#   make test-qemu-next  every test again with Debian 13's QEMU 10 (build/qemu-next/), or skipped: why
#   make layers     the layer check on the built objects (tests/layers)
#   make bench      benchmark figures (boot time against a bare multiboot2 kernel)
#   make bench-peers  Linux's perf sampling the same workloads in the same emulator (docs/bench-peers.md)
#   make profile-demo  the profiler end to end, with gprof reading its histogram
#   make flamegraph PROG="calltree"   record PROG in the OS; build/flamegraph.html, profile.html, profile.folded
#   make pictures PROG="calltree"     the same, then build/pictures/: each view as PNG and SVG, each page as PDF
#   make perf-data PROG="calltree"    record PROG; build/perf.data for perf and hotspot
#   make record PROG="calltree" [SECONDS=N]   record PROG (or the machine for N s) straight
#                                     to build/recording.bin on the host; then any of
#   make perf-data RECORDING=build/recording.bin   (flamegraph, speedscope, annotate too)
#   make speedscope PROG="calltree"   record PROG; build/profile.speedscope.json, profile.trace.json
#   make speedscope-serve PROG="calltree"   the same, then serve it on 127.0.0.1 and print the address that opens it
#   make annotate PROG=calib FUNC=calib_a   samples beside each instruction of FUNC (half a minute to over two)
#   make profile-diff PROG=calib A="run -b 2" B="run -b 8"   two profiles compared per function
#   make cpuid-replay  build/cpuid-replay: PMU detection over AIDA64 CPUID dumps (tests/fixtures/cpuid)
#   make pmu-explore  100,000 seeded sequences of PMU-layer steps on the model (SEQS=, SEED=, REPLAY=)
#   make ke-explore   100,000 seeded sequences of profile-layer steps on 2-4 simulated CPUs (SEQS=, SEED=, REPLAY=)
#   make fuzz       1,000,000 random system calls on 4 CPUs, then a leak check
#   make fuzz-state 1,000,000 calls in sequences over live profiles, PMCs, the log, children
#   make fuzz-users an unprivileged attacker beside a privileged victim: 2,000 victim operations (FUZZ_SEED=, FUZZ_SMP=)
#   make soak       the three fuzzers in full, seeds 1-3 on -smp 4 and 1 on -smp 2: run before a release
#   make stress     profile storms, kills while sampled, lookups racing exits, 10 s of ticks
#   make test-scale the CPU-count-sensitive suites at -smp 16 and -smp 64 (about 5 minutes)
#   make debug      QEMU waiting for gdb
#   make CC=clang   the same with clang (gcc is the default)

SHELL   := /bin/bash
CC      ?= gcc
ifeq ($(origin CC),default)
CC      := gcc
endif
LD      := ld
NASM    := nasm
OBJCOPY := objcopy
# The emulator (QEMU=PATH to use another, e.g. `make test
# QEMU=build/qemu-next/qemu-system-x86_64`), exported so that every script
# make starts uses it too; scripts/qemu.sh gives them the same default alone.
# ICOUNT_CPU, the CPU model of every run under -icount, is defined there, with
# the reason it cannot be plain `-cpu max` (QEMU >= 8.1: no x2APIC under icount).
QEMU    ?= qemu-system-x86_64
export QEMU
ICOUNT_CPU := $(shell sed -n 's/^ICOUNT_CPU="\(.*\)"$$/\1/p' scripts/qemu.sh)

BUILD   := build
OBJ     := $(BUILD)/obj-$(notdir $(CC))
KERNEL  := $(BUILD)/kernel.elf
ISO     := $(BUILD)/os.iso

# Kernel command line for `make run` (see kernel/lib/cmdline.c for the options).
CMDLINE ?=
SMP     ?= 4
MEM     ?= 512M
# ICOUNT=1: QEMU's deterministic mode (software CPU only), where guest time
# counts instructions, so time sampling is exact and repeatable; the kernel is
# told with its option `icount`.
ICOUNT  ?=
ifeq ($(ICOUNT),1)
RUN_CMDLINE := $(strip $(CMDLINE) icount)
RUN_ACCEL    = $(ICOUNT_CPU) -icount shift=0,sleep=off
else
RUN_CMDLINE := $(CMDLINE)
RUN_ACCEL    = $$(scripts/accel.sh $(BUILD)/tests/probe.iso)
endif

KCFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie \
	-mno-red-zone -mcmodel=kernel -mgeneral-regs-only -mno-sse -mno-mmx \
	-fno-stack-protector -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-strict-aliasing -fno-builtin -nostdlib -Ikernel -MD -MP
# The kernel keeps its stack 8-byte aligned, as Linux does on x86-64: with no
# SSE nothing needs 16, and an interrupt entry then pads nothing (vectors.asm).
ifeq ($(notdir $(CC)),clang)
KCFLAGS += --target=x86_64-unknown-none-elf -mstack-alignment=8
else
KCFLAGS += -fno-tree-loop-distribute-patterns # keep memset's loop from becoming a memset call
KCFLAGS += -mpreferred-stack-boundary=3
endif
KLDFLAGS := -nostdlib -z max-page-size=0x1000 -z noexecstack --no-warn-rwx-segments -T linker.ld

# asm_offsets.c is never linked: it only makes $(ASM_OFFSETS) (below).
ASM_OFFSETS_C := kernel/arch/x86/asm_offsets.c
KSRC_C   := $(filter-out $(ASM_OFFSETS_C),$(shell find kernel -name '*.c' | sort))
KSRC_ASM := boot/entry.asm $(shell find kernel -name '*.asm' | sort)
KOBJ     := $(KSRC_C:%.c=$(OBJ)/%.o) $(KSRC_ASM:%.asm=$(OBJ)/%.o)

.DEFAULT_GOAL := all

# Userland (USER_PROGS), host unit tests and the hosted pmc tests.
-include userland/userland.mk
include tests/host/host.mk
-include tests/pmc/pmc.mk
-include tests/ke/ke.mk
-include labs/labs.mk

.PHONY: lint layers layers-mutations all iso run run-gui test test-qemu-next test-kvm bench fuzz fuzz-state soak stress test-scale profile-demo debug clean deps help compile_commands.json \
	flamegraph pictures annotate profile-diff profview-vendor browser-vendor deps-pictures deps-browser \
	perf-data speedscope speedscope-serve speedscope-open deps-perf record
all: $(KERNEL) $(USER_PROGS)

help:
	@sed -n 's/^#   //p' Makefile

deps:
	@scripts/deps.sh

# Node.js and npm for the flame-graph pages; chromium for their browser test
# (which says `skipped:` when chromium cannot be installed).
deps-pictures:
	@scripts/deps.sh pictures
deps-browser:
	@scripts/deps.sh pictures browser || echo "deps: chromium could not be installed; the browser test will skip"
# Debian's perf (linux-perf) and hotspot, which read build/perf.data, and
# python3-jsonschema, which checks the speedscope file against speedscope's schema.
deps-perf:
	@scripts/deps.sh perf || echo "deps: linux-perf could not be installed; the perf checks will skip"
	@scripts/deps.sh hotspot || echo "deps: hotspot could not be installed; the hotspot checks will skip"

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(KCFLAGS) -c $< -o $@

$(OBJ)/%.o: %.asm
	@mkdir -p $(@D)
	$(NASM) -f elf64 -g -F dwarf -I$(BUILD)/ -Ikernel/arch/x86/ -MD $(@:.o=.d) $< -o $@

# The constants the assembly takes from C, as Linux's asm-offsets: asm_offsets.c
# compiled with -S (never linked) leaves one `.ascii "=asm-const NAME VALUE"`
# line per ASM_CONST in the compiler's output; sed makes each one a
# `%define NAME (VALUE)` of $(ASM_OFFSETS), which the .asm files %include
# (found through -I$(BUILD)/). The compiler's -MD records the headers it read,
# so a changed struct regenerates the file and reassembles every .asm object.
# The count check catches a marker line the sed pattern would miss.
ASM_OFFSETS := $(BUILD)/asm-offsets.inc
ASM_OFFSETS_S := $(OBJ)/$(ASM_OFFSETS_C:.c=.s)
$(ASM_OFFSETS): $(ASM_OFFSETS_C)
	@mkdir -p $(@D) $(dir $(ASM_OFFSETS_S))
	$(CC) $(KCFLAGS) -MF $(ASM_OFFSETS_S:.s=.d) -MT $@ -S $< -o $(ASM_OFFSETS_S)
	@{ printf '; Generated from %s by the Makefile: do not edit.\n' $<; \
	   printf '%%ifndef ASM_OFFSETS_INC\n%%define ASM_OFFSETS_INC\n'; \
	   sed -n 's/^[[:space:]]*\.ascii[[:space:]]*"=asm-const \([A-Za-z_][A-Za-z0-9_]*\) \(-\{0,1\}[0-9][0-9]*\)"$$/%define \1 (\2)/p' $(ASM_OFFSETS_S); \
	   printf '%%endif\n'; } > $@.tmp
	@want=$$(grep -c '^ *ASM_CONST(' $<); got=$$(grep -c '^%define [A-Za-z0-9_]* (' $@.tmp); \
	 [ "$$want" = "$$got" ] || { echo "$@: $$got of $$want constants found in $(ASM_OFFSETS_S)"; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@
$(KSRC_ASM:%.asm=$(OBJ)/%.o): $(ASM_OFFSETS)

# The AP trampoline runs at a fixed low address: assembled flat, then embedded.
$(BUILD)/trampoline.bin: boot/trampoline.asm $(ASM_OFFSETS)
	@mkdir -p $(@D)
	$(NASM) -f bin -I$(BUILD)/ $< -o $@
$(OBJ)/kernel/arch/x86/trampoline_blob.o: $(BUILD)/trampoline.bin

$(KERNEL): $(KOBJ) linker.ld
	$(LD) $(KLDFLAGS) -o $@ $(KOBJ)

# The GRUB modules an image carries: what booting from the CD needs, and the
# partition maps GRUB's normal mode probes every disk with when it starts
# (grub-mkrescue lists all of them in partmap.lst; a missing one prints an
# "error: file ... not found" line on the boot screen). No platform-only
# module (biosdisk is i386-pc's): grub-mkrescue installs the list for every
# platform it finds, and with grub-efi-amd64-bin present a BIOS-only name
# fails the x86_64-efi copy ("cannot copy .../x86_64-efi/biosdisk.mod");
# the BIOS CD's core image has biosdisk anyway.
GRUB_MODULES := multiboot2 normal iso9660 configfile part_acorn part_amiga \
	part_apple part_bsd part_dfly part_dvh part_gpt part_msdos part_plan part_sun part_sunpc

# An ISO whose GRUB passes $(1) as the kernel command line. Every userland
# program is a module named after itself (the ramdisk), and so is the kernel
# ("kernel", for symbolizing kernel samples in ring 3). Debug information is
# left out of the image (symbol tables stay): it would only slow the boot.
define make_iso
	@rm -rf $(2).d && mkdir -p $(2).d/boot/grub $(2).d/boot/bin
	@$(OBJCOPY) --strip-debug $(KERNEL) $(2).d/boot/kernel.elf
	@for p in $(USER_PROGS); do $(OBJCOPY) --strip-debug $$p $(2).d/boot/bin/$$(basename $$p); done
	@{ printf 'set timeout=0\nset default=0\nmenuentry "os" {\n  multiboot2 /boot/kernel.elf %s\n' "$(1)"; \
	   printf '  module2 /boot/kernel.elf kernel\n'; \
	   for p in $(notdir $(USER_PROGS)); do printf '  module2 /boot/bin/%s %s\n' $$p $$p; done; \
	   printf '  boot\n}\n'; } > $(2).d/boot/grub/grub.cfg
	@grub-mkrescue -o $(2) --install-modules="$(GRUB_MODULES)" \
		--fonts= --locales= --themes= --compress=xz $(2).d >$(2).log 2>&1 || \
		{ cat $(2).log; echo "grub-mkrescue failed: $(2)"; rm -f $(2); exit 1; }
	@rm -rf $(2).d $(2).log
endef

# Test ISOs: build/tests/NAME.iso boots with test=NAME; build/tests/NAME+opt~val.iso
# adds opt=val (make reads "=" in a target as an assignment).
$(BUILD)/tests/%.iso: $(KERNEL) $(USER_PROGS) Makefile
	@mkdir -p $(@D)
	$(call make_iso,test=$(subst ~,=,$(subst +, ,$*)),$@)

# The shell as init in a plain boot (no test mode): for scripted sessions.
$(BUILD)/tests/shell.iso: $(KERNEL) $(USER_PROGS) Makefile
	@mkdir -p $(@D)
	$(call make_iso,,$@)

# Rewritten only when CMDLINE changes, so `make run CMDLINE=...` rebuilds the ISO.
$(BUILD)/cmdline.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(RUN_CMDLINE)' | cmp -s - $@ || echo '$(RUN_CMDLINE)' > $@
FORCE:

iso: $(ISO)
$(ISO): $(KERNEL) $(USER_PROGS) $(BUILD)/cmdline.txt Makefile
	$(call make_iso,$(RUN_CMDLINE),$@)
	@echo "iso: $@"

# UEFI=1: boot under OVMF, UEFI firmware (the ovmf package), on a q35 machine,
# instead of SeaBIOS on pc; the ISO then boots through GRUB's x86_64-efi image
# (grub-efi-amd64-bin). There is no VGA text mode there: the console is the
# serial line only (the kernel says so).
UEFI    ?=
OVMF    ?= $(firstword $(wildcard /usr/share/ovmf/OVMF.fd /usr/share/qemu/OVMF.fd))
ifeq ($(UEFI),1)
QEMU_MACHINE = -machine q35 -bios $(OVMF)
UEFI_CHECK = @[ -n "$(OVMF)" ] && [ -d /usr/lib/grub/x86_64-efi ] || \
	{ echo "run: UEFI=1 needs the ovmf and grub-efi-amd64-bin packages (make deps), then a rebuilt ISO (make clean)"; exit 1; }
else
QEMU_MACHINE = -machine pc -boot d
UEFI_CHECK = @:
endif
QEMU_COMMON = $(QEMU_MACHINE) -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04

# LOG=FILE: the console is also written to FILE (what the host's tools read:
# scripts/profview/profview.py export FILE); QEMU's status is still the one checked.
LOG ?=
# The host's recording file of `make run`: `profile record --host` in the
# guest appends a recording to it (the last one is what the tools read).
HOST_DEVICE := $(shell sed -n 's/^HOST_DEVICE="\(.*\)"$$/\1/p' scripts/qemu.sh)
RUN_RECORDING = $(HOST_DEVICE) -chardev file,id=recording,path=$(BUILD)/recording.bin,append=on

run: deps $(ISO) $(BUILD)/tests/probe.iso
	$(UEFI_CHECK)
	@echo "run: quit with Ctrl-A then X (the QEMU monitor is Ctrl-A then C); profile record --host appends to $(BUILD)/recording.bin$(if $(LOG),; the console goes to $(LOG) too)"
	@$(QEMU) $(QEMU_COMMON) $(RUN_ACCEL) -smp $(SMP) -m $(MEM) -cdrom $(ISO) $(RUN_RECORDING) \
		-nographic -serial mon:stdio $(if $(LOG),| tee $(LOG)); status=$${PIPESTATUS[0]}; \
		[ $$status -eq 0 ] || [ $$status -eq 33 ] || echo "qemu exited with $$status"

run-gui: deps $(ISO) $(BUILD)/tests/probe.iso
	$(QEMU) $(QEMU_COMMON) $(RUN_ACCEL) -smp $(SMP) -m $(MEM) -cdrom $(ISO) -serial stdio

debug: deps $(ISO)
	@echo "debug: QEMU waits for gdb on :1234. In another terminal:"
	@echo "  gdb $(KERNEL) -ex 'target remote :1234' -ex 'break kmain' -ex continue"
	$(QEMU) $(QEMU_COMMON) -cpu max -smp $(SMP) -m $(MEM) -cdrom $(ISO) -nographic -serial mon:stdio -s -S

test-kvm: deps
	@tests/kvm-pmc

# Style: every C file as .clang-format says (clang-format -i FILE fixes one).
lint:
	@git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

# Layers (tests/layers): every symbol a kernel object uses is defined in the
# same or a lower layer, or is an upcall on its list of hooks by design.
layers: $(KOBJ)
	@tests/layers --objdir $(OBJ) $(KOBJ)

# The same check made to fail: upward references added to copies of a few
# sources, each built alone beside the other objects (tests/layers-mutations).
layers-mutations: $(KOBJ)
	@CC="$(CC)" KCFLAGS="$(KCFLAGS)" NASM="$(NASM)" BUILD="$(BUILD)" OBJ="$(OBJ)" \
		KOBJ="$(KOBJ)" tests/layers-mutations

test: deps deps-pictures deps-browser deps-perf
	@tests/run

# Every test again with Debian 13's QEMU 10 (x2APIC under TCG), assembled from
# Debian's packages into build/qemu-next/ by scripts/qemu-next.sh with no change
# to the system; `skipped: <why>` (status 0) when they cannot be fetched.
test-qemu-next: deps
	@q=$$(scripts/qemu-next.sh); status=$$?; \
	 if [ $$status -eq 2 ]; then echo "$$q"; exit 0; fi; \
	 [ $$status -eq 0 ] || { echo "test-qemu-next: scripts/qemu-next.sh failed ($$status): $$q"; exit 1; }; \
	 echo "test-qemu-next: $$(head -n 1 build/qemu-next/version.txt) ($$q)"; \
	 start=$$(date +%s); $(MAKE) --no-print-directory test QEMU="$$q"; status=$$?; \
	 echo "test-qemu-next: $$(( $$(date +%s) - start )) s"; exit $$status

# Benchmarks print figures; they do not pass or fail (tests/bench/bench.py).
$(BUILD)/bench/hello.iso: tests/bench/hello.asm tests/bench/hello.ld
	@mkdir -p $(@D)/iso/boot/grub
	$(NASM) -f elf32 $< -o $(@D)/hello.o
	$(LD) -m elf_i386 -T tests/bench/hello.ld -o $(@D)/iso/boot/hello.elf $(@D)/hello.o
	@printf 'set timeout=0\nset default=0\nmenuentry "hello" {\n  multiboot2 /boot/hello.elf\n  boot\n}\n' > $(@D)/iso/boot/grub/grub.cfg
	@grub-mkrescue -o $@ --install-modules="$(GRUB_MODULES)" \
		--fonts= --locales= --themes= --compress=xz $(@D)/iso >$@.log 2>&1 || \
		{ cat $@.log; echo "grub-mkrescue failed: $@"; rm -f $@; exit 1; }

bench: deps $(ISO) $(BUILD)/bench/hello.iso
	@tests/bench/bench.py

# The cost of a sample under Debian's Linux and perf, booted in the same
# emulator with the same flags (docs/bench-peers.md). Installs
# linux-image-amd64, linux-perf and busybox-static when missing. Not part of
# `make test`; `BENCH_PEERS=1 make bench` runs it after the bench.
.PHONY: bench-peers
bench-peers: deps $(USER_OUT)/bench
	@tests/bench/peers/peers.py

# 1,000,000 random system calls from 4 processes on 4 CPUs; no panic, no leak.
# FUZZ_SEED picks the calls, FUZZ_SMP the CPUs; the log is build/fuzz-SEED-smpN.log.
FUZZ_SEED ?= 1
FUZZ_SMP ?= 4
FUZZ_LOG = $(BUILD)/$(1)-$(FUZZ_SEED)-smp$(FUZZ_SMP).log
FUZZ_RUN = FUZZ_SEED=$(FUZZ_SEED) FUZZ_SMP=$(FUZZ_SMP) QEMU_COMMON="$(QEMU_COMMON)" BUILD=$(BUILD) tests/fuzz-run
fuzz: deps
	@$(FUZZ_RUN) fuzz 'fuzz,1000000,$(FUZZ_SEED),4' $(call FUZZ_LOG,fuzz) '^fuzz|panic|^init'

# The stateful fuzzer (userland/bin/fuzz_state/): 1,000,000 calls in
# sequences over live profiles, PMCs, the log and children, from 4 processes on
# 4 CPUs; invariants after every sequence, then a leak check. NARROW=N sets
# the flags that keep it off the kernel bugs it found (fuzz_state.h; 0: none);
# REPLAY=SEED,LEN[,I...] runs one sequence again, each call printed. When the
# kernel fails, the sequence each fuzzing process was in is printed with its
# REPLAY= (the log names each sequence before it runs).
comma := ,
FUZZ_STATE_ARGS = $(if $(REPLAY),--replay$(comma)$(REPLAY),1000000$(comma)$(FUZZ_SEED)$(comma)4$(if $(NARROW),$(comma)$(NARROW)))
fuzz-state: deps
	@$(FUZZ_RUN) fuzz-state 'fuzz_state,$(FUZZ_STATE_ARGS)' $(call FUZZ_LOG,fuzz-state) '^fuzz-state[:]|panic|^init|^  \['

# An attacker beside a victim (userland/bin/fuzz_users.c): a privileged
# victim does FUZZ_USERS_OPS of what profiling users do while 3 unprivileged
# attackers grab every shared resource beside the stateful fuzzer; ends with
# "fuzz-users: N victim operations, N attacker calls, N denials caused by
# attackers, N failures".
FUZZ_USERS_OPS ?= 2000
fuzz-users: deps
	@$(FUZZ_RUN) fuzz-users 'fuzz_users,$(FUZZ_USERS_OPS),$(FUZZ_SEED)' $(call FUZZ_LOG,fuzz-users) '^fuzz-users: [0-9]|panic|got through|victim:|leak|fuzzer failed'

# The check before a release: the fuzzers in full (1,000,000 calls; fuzz-users
# 2,000 victim operations) with
# seeds 1, 2 and 3 on -smp 4 and seed 1 on -smp 2 (8 runs of 10 to 20 minutes
# each here under TCG), each ending with its summary line, then one line
# "soak: N runs, N passed, N failed".
SOAK_RUNS := 1:4 2:4 3:4 1:2
soak: deps
	@passed=0; failed=0; \
	 for target in fuzz fuzz-state fuzz-users; do for run in $(SOAK_RUNS); do \
	   if $(MAKE) -s $$target FUZZ_SEED=$${run%:*} FUZZ_SMP=$${run#*:}; then passed=$$((passed + 1)); \
	   else failed=$$((failed + 1)); fi; \
	 done; done; \
	 echo "soak: $$((passed + failed)) runs, $$passed passed, $$failed failed"; [ $$failed -eq 0 ]

# Start/stop/close storms, kills while sampled, faults, lookups racing exits,
# and 10 s of ProfileTime at 1,221 on every CPU with every tick accounted;
# each ends with a leak check.
stress: deps
	@for t in storm,400 kill,1000 faults,5000 lookups,20000 reap,5000 ticks,10; do \
	    $(MAKE) -s $(BUILD)/tests/init+init~stress,$$t.iso || exit 1; \
	    timeout 1800 $(QEMU) $(QEMU_COMMON) -cpu max -smp 4 -m 512M -display none -serial stdio \
	        -cdrom $(BUILD)/tests/init+init~stress,$$t.iso | grep -E '^stress|panic'; \
	    [ $${PIPESTATUS[0]} -eq 33 ] || { echo "stress $$t: FAILED"; exit 1; }; \
	done

# The suites whose work grows with the CPUs, at -smp 16 and -smp 64
# (tests/scale-tests): about 5 minutes on 2 host cores; ends with
# "N passed, N failed". Not part of `make test`.
test-scale: deps all
	@tests/scale-tests

# The profiler end to end: the in-OS report and gprof's flat profile of the
# same run (the histogram leaves the machine as a gmon.out).
profile-demo: deps
	@tests/profile-demo

# Pictures of a profile, made on the host (scripts/profview): the guest's
# export leaves on the console of a headless boot under icount. PROG is a
# program and its arguments.
PROFVIEW := scripts/profview/profview.py
FUNC ?=
A ?= run -b 2
B ?= run -b 8

# npm packages, each pinned by a committed lockfile and installed by `npm ci`
# into build/: the flame-graph renderer the pages inline, and playwright-core,
# which drives Debian's chromium in the browser test.
$(BUILD)/profview/node_modules/.installed: scripts/profview/package.json scripts/profview/package-lock.json
$(BUILD)/browser/node_modules/.installed: tests/browser/package.json tests/browser/package-lock.json
$(BUILD)/profview/node_modules/.installed $(BUILD)/browser/node_modules/.installed: | deps-pictures
	@mkdir -p $(dir $(@D)) && cp $^ $(dir $(@D))
	@cd $(dir $(@D)) && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1 || { cat npm.log; exit 1; }
	@touch $@
profview-vendor: $(BUILD)/profview/node_modules/.installed
browser-vendor: $(BUILD)/browser/node_modules/.installed

# make record: PROG with call chains (or, with SECONDS, the whole machine for
# that long, PROG running beside it), streamed to build/recording.bin while it
# records, on -smp $(SMP) under TCG or KVM as `make run` chooses. RECORDING=FILE
# makes the exporters below convert FILE instead of booting.
RECORDING ?=
SECONDS ?= 0
record: deps all $(BUILD)/tests/shell.iso $(BUILD)/tests/probe.iso
	@$(PROFVIEW) record-run --prog "$(PROG)" --seconds $(SECONDS) --smp $(SMP) --accel "$(RUN_ACCEL)" --out $(BUILD)

flamegraph: deps deps-pictures profview-vendor all $(BUILD)/tests/shell.iso
	@$(if $(RECORDING),$(PROFVIEW) export $(RECORDING) --title "$(notdir $(RECORDING))" --out $(BUILD),$(PROFVIEW) flamegraph --prog "$(PROG)" --out $(BUILD))

# Pictures for slides and handouts: PROG recorded as `make flamegraph` does,
# then each view of its pages as PNG and SVG, and each page as it prints
# (PDF), in build/pictures/ (scripts/profview/pictures.js, headless Chromium
# as tests/browser uses it; without it: "skipped: WHY").
pictures: flamegraph
	@$(MAKE) -s browser-vendor >/dev/null 2>&1 || { echo "skipped: pictures: playwright-core could not be installed (make browser-vendor)"; exit 0; }; \
	NODE_PATH=$(BUILD)/browser/node_modules node scripts/profview/pictures.js $(BUILD)/pictures \
		$(BUILD)/flamegraph.html $(BUILD)/profile.html; st=$$?; [ $$st -eq 3 ] || exit $$st

# build/perf.data for perf report, perf script, perf annotate and hotspot (the
# images, with build-ids added, in build/perf/; the kernel's goes into perf's
# build-id cache), and build/profile.speedscope.json
# with build/profile.trace.json (the context switches) for speedscope.
perf-data: deps deps-perf all $(BUILD)/tests/shell.iso
	@$(if $(RECORDING),$(PROFVIEW) perfdata $(RECORDING) --out $(BUILD),$(PROFVIEW) perf-data-run --prog "$(PROG)" --out $(BUILD))

# What `make speedscope` says next: how to open the file; under
# speedscope-serve (whose prerequisite it is: target-specific variables reach
# prerequisites, GNU make manual 6.11), that the server comes next.
SPEEDSCOPE_NEXT = open it with speedscope's Browse button in $(BUILD)/profview/node_modules/speedscope/dist/release/index.html, or record and open it in one step: make speedscope-serve
speedscope: deps deps-pictures profview-vendor all $(BUILD)/tests/shell.iso
	@$(if $(RECORDING),$(PROFVIEW) speedscope $(RECORDING) --out $(BUILD),$(PROFVIEW) speedscope-run --prog "$(PROG)" --out $(BUILD))
	@echo "speedscope: wrote $(BUILD)/profile.speedscope.json; $(SPEEDSCOPE_NEXT)"

# speedscope opens a profile named in its URL (#profileURL=...) only over
# HTTP, not from file://: speedscope-serve records as `make speedscope` does,
# then (speedscope-open alone: the last recording) serves build/ on this
# machine's loopback and prints the address that opens the recording.
SPEEDSCOPE_PORT ?= 8123
speedscope-serve: SPEEDSCOPE_NEXT = serving it on 127.0.0.1:$(SPEEDSCOPE_PORT) now
speedscope-serve: speedscope
	@$(MAKE) -s speedscope-open
speedscope-open:
	@test -f $(BUILD)/profile.speedscope.json || { echo "speedscope-open: no $(BUILD)/profile.speedscope.json (make speedscope PROG=... writes it)"; exit 1; }
	@echo "speedscope: open http://127.0.0.1:$(SPEEDSCOPE_PORT)/profview/node_modules/speedscope/dist/release/index.html#profileURL=http%3A%2F%2F127.0.0.1%3A$(SPEEDSCOPE_PORT)%2Fprofile.speedscope.json (Ctrl-C stops the server)"
	@cd $(BUILD) && exec python3 -m http.server --bind 127.0.0.1 $(SPEEDSCOPE_PORT) 2>/dev/null

annotate: deps all $(BUILD)/tests/shell.iso
	@$(if $(RECORDING),$(PROFVIEW) annotate $(RECORDING) --prog "$(firstword $(PROG))" --func "$(FUNC)",echo "annotate: boots QEMU under icount and runs PROG twice: half a minute on an idle host, over two minutes on a loaded one"; $(PROFVIEW) annotate-run --prog "$(PROG)" --func "$(FUNC)" --out $(BUILD))

# A and B may each be a file (two recordings of make record, say): compared as they are.
one_file = $(and $(filter 1,$(words $(1))),$(wildcard $(1)))
profile-diff: deps deps-pictures profview-vendor all $(BUILD)/tests/shell.iso
	@$(if $(and $(call one_file,$(A)),$(call one_file,$(B))),$(PROFVIEW) diff $(A) $(B) --html $(BUILD)/profile-diff.html,$(PROFVIEW) diff-run --prog "$(PROG)" --a "$(A)" --b "$(B)" --out $(BUILD))

compile_commands.json:
	@scripts/compile_commands.sh "$(CC)" "$(KCFLAGS)" $(KSRC_C) $(ASM_OFFSETS_C) > $@
	@echo "wrote $@"

clean:
	rm -rf $(BUILD) compile_commands.json

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
