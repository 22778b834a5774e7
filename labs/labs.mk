# The labs (labs/README.md): skeletons, grading and their check. Included by
# the top Makefile.
#
#   make lab LAB=NAME   build/labs/NAME/: the project with lab NAME's pieces stubbed
#   make grade          in a lab's tree: its graded tests and `score: N/M` (LAB=NAME elsewhere)
#   make labs-check     every lab's manifest found, each skeleton built and graded (QEMU too)
.PHONY: lab grade labs-check test-labs
LAB ?=
lab:
	@[ -n "$(LAB)" ] || { echo "lab: which one? make lab LAB=NAME (labs: $$(ls labs | tr '\n' ' '))"; exit 2; }
	@scripts/labs/mklab $(LAB)

grade:
	@scripts/labs/grade $(LAB)

labs-check:
	@tests/labs-check --all
test-labs: labs-check

# The pmi lab's model tests (labs/pmi/model_main.c in place of the suite's main).
$(BUILD)/grade/pmi-model: $(PMC_HOST_DEPS) labs/pmi/model_main.c
	@mkdir -p $(@D)
	gcc $(PMC_HOST_CFLAGS) -iquote tests/pmc -o $@ $(PMC_KERNEL_SRCS) \
	    $(filter-out tests/pmc/test_main.c,$(PMC_TEST_SRCS)) labs/pmi/model_main.c
