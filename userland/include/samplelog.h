// The sample log as a file: the records NtPmcReadLog hands out (lib/abi/pmclog.h,
// struct pmclog_*), appended as they are drained, and one trailer record
// with the driver's statistics at the end of the recording.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/abi/status.h"
#include "lib/abi/pmclog.h"
#include "lib/abi/pmc.h"

#define SAMPLELOG_DEFAULT_FILE "/tmp/pmc.log"
#define PMCLOG_TRAILER         0x100 // userland only: struct samplelog_trailer
#define PMCLOG_RECORDING       0x101 // userland only: struct samplelog_recording

// `profile record --host`: the destination that names the host's recording
// file (SysHostWrite, the virtio console), not a file of /tmp. There the
// recording is a struct samplelog_recording, then the records as in /tmp,
// then the trailer (docs/pmc-log.md, "Recordings on the host").
#define SAMPLELOG_HOST              "host"
#define SAMPLELOG_RECORDING_MAGIC   "PMCREC\r\n" // 8 bytes, at offset 16
#define SAMPLELOG_RECORDING_VERSION 1
struct samplelog_recording {
    struct pmclog_header h;  // type PMCLOG_RECORDING, size: this struct's
    char magic[8];           // SAMPLELOG_RECORDING_MAGIC
    uint32_t version;        // SAMPLELOG_RECORDING_VERSION: this header and the trailer
    uint32_t pmclog_version; // PMCLOG_VERSION: the records between them
    char cpu[96];            // "VENDOR,FAMILY,MODEL,STEPPING BRAND", as the export's `cpu` line
};

struct samplelog_trailer {
    struct pmclog_header h;
    uint32_t source, mode;
    uint32_t flags, notes; // notes: SAMPLELOG_NOTE_*
    uint64_t interval;     // source units per sample
    struct pmc_driver_stats stats;
    char command[128];
    uint64_t bytes; // the records before this trailer, as the recorder saved them
};

// Time sampling under QEMU without -icount (SysInfo's time_sampling_approximate):
// the shares follow the host's scheduling of the vCPUs.
#define SAMPLELOG_NOTE_APPROXIMATE_TIME 0x1

// `profile record`'s own PMCLOG_USER records (NtPmcWriteLog), in the kernel's
// time: the program resumed (or, -p, the attachment began) and the stop. A
// process's time in the recording runs from the later of START and its
// PMCLOG_MAP to the earlier of STOP and its PMCLOG_EXIT.
#define SAMPLELOG_MARK_START 0x5452415453ull // "START"
#define SAMPLELOG_MARK_STOP  0x504f5453ull   // "STOP"

struct samplelog {
    uint8_t *data; // the whole file
    size_t size;
    const struct samplelog_trailer *trailer; // NULL when the recording did not finish
};

// A recording begun at file: a /tmp file emptied, or, for SAMPLELOG_HOST,
// the host's recording header written (STATUS_NO_SUCH_DEVICE without the
// device). NTSTATUS of the failing call.
NTSTATUS samplelog_begin(const char *file);
// len bytes appended to file, or to the host's file for SAMPLELOG_HOST.
NTSTATUS samplelog_save(const char *file, const void *buf, size_t len);
// "VENDOR,FAMILY,MODEL,STEPPING BRAND" of this CPU, as perf's header has it.
void samplelog_cpu(char *buf, size_t len);
// Reads the file (SysTmpRead). NTSTATUS of the failing call.
NTSTATUS samplelog_load(const char *file, struct samplelog *out);
void samplelog_free(struct samplelog *log);
// The record at *pos (advancing it), or NULL at the end or at a damaged record.
const struct pmclog_header *samplelog_next(const struct samplelog *log, size_t *pos);
// Drains the kernel's log into file (appending), len bytes a read, until it
// is empty or after max_reads reads (0: until empty), so that a periodic
// caller which cannot keep up with the samples still comes back to check its
// deadline (what it leaves is lost and counted, not waited for). Bytes
// appended, or the failing call's status, which is negative as a long (every
// failure status has bit 31 set): what was appended before stays in the file.
long samplelog_drain(const char *file, void *buf, size_t len, unsigned max_reads);
// A refusal at the boundary between users (README, "One user cannot harm
// another": a /tmp file's owner, mode or share, the unprivileged share of
// logs, running PMCs or memory) as what a person does about it; NULL for any
// other status.
const char *samplelog_why(NTSTATUS s);
// Prints one line to stderr, "profile: cannot ACTION FILE: STATUS (WHY; HINT)":
// WHY samplelog_why's, HINT the caller's; either may be NULL.
void samplelog_error(const char *action, const char *file, NTSTATUS s, const char *hint);
#define SAMPLELOG_DRAIN_READS 8 // a periodic drain's reads at most
