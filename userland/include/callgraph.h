// Call graphs from a sample log: every sample's chain symbolized (the kernel's
// and each program's ELF symbol tables, found through the log's PMCLOG_MAP
// records), then the reports of `profile report`: a flat table with self and
// children (inclusive) percentages, callers and callees of the top functions,
// folded stacks (Brendan Gregg's format) and the export block.
#pragma once
#include <samplelog.h>
#include <stdint.h>

struct callgraph;

// NULL when out of memory. The log must outlive the graph.
struct callgraph *callgraph_build(const struct samplelog *log);
// The off-CPU graph: one chain per PMCLOG_OFFCPU record whose switch-in
// (PMCLOG_ONCPU, same pid and seq) is in the log, weighted by the
// microseconds away, with the reason as its leaf frame ("[sleep]").
struct callgraph *callgraph_build_offcpu(const struct samplelog *log);
void callgraph_free(struct callgraph *cg);
uint64_t callgraph_samples(const struct callgraph *cg); // chains
uint64_t callgraph_total(const struct callgraph *cg);   // their weights
// "sleep", "child", ... for enum thread_wait (lib/abi/pmclog.h).
const char *callgraph_reason_name(unsigned reason);
// The switch-in that ended r's absence, or NULL (an off-CPU graph's).
const struct pmclog_oncpu *callgraph_offcpu_end(const struct callgraph *cg,
                                                const struct pmclog_offcpu *r);

void callgraph_print_flat(const struct callgraph *cg, unsigned top);
void callgraph_print_tree(const struct callgraph *cg, unsigned top);
void callgraph_print_folded(const struct callgraph *cg, const char *prefix);
void callgraph_print_breakdown(const struct callgraph *cg, int by_pid, int by_cpu);
void callgraph_print_export(const struct callgraph *cg, const struct samplelog *log);
