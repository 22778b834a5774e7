// /tmp: a RAM file system of flat files, for what must outlive a process
// (`profile record` writes the PMC log to /tmp/pmc.log, `profile report`
// reads it). Names are "/tmp/" and then letters, digits, '.', '_' or '-';
// files live until removed or the machine stops; all of them together hold at
// most TMP_BYTES_MAX bytes. Every file is whole pages of system space
// (core/sysmap.h: no contiguous physical memory needed), grown by doubling.
//
// Each file has an owner, one of the two users (privileged or not), and a
// mode; each byte of capacity is charged to the user whose write added it.
// lib/abi/syscalls.h states the rules (who may read, append, replace and
// remove; the unprivileged share and the privileged reserve); here they are
// owns, may and room_for.
#include "lib/string.h"

#include "core/addrspace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/sysmap.h"
#include "core/uaccess.h"

#include "sys/syscall.h"

#define PREFIX    "/tmp/"
#define MODE_BITS (TMP_OTHERS_READ | TMP_OTHERS_APPEND)

struct tmpfile {
    char name[TMP_NAME_MAX];
    uint8_t *data;
    size_t size, cap;
    size_t cap_unprivileged; // of cap, what unprivileged writes added (their share)
    bool privileged;         // the owner: the privileged user, else the unprivileged one
    uint32_t mode;           // TMP_OTHERS_READ, TMP_OTHERS_APPEND
    struct tmpfile *next;
};

static struct mutex tmp_mutex = MUTEX_INIT("tmpfs");
static struct tmpfile *files;
static size_t total_bytes;        // capacity of every file
static size_t unprivileged_bytes; // of it, what unprivileged writes added

// The caller's user: privileged for a process holding the privilege (sudo),
// and for the kernel itself.
static bool caller_privileged(void)
{
    const struct process *me = process_current();
    return !me || me->privileged;
}

// Whether a caller of that user may replace or remove f: its owner, or any
// privileged process (the sticky bit's rule; root's bypass).
static bool owns(const struct tmpfile *f, bool privileged)
{
    return privileged || !f->privileged;
}

// Whether the caller may read (TMP_OTHERS_READ) or append (TMP_OTHERS_APPEND):
// the owner and privileged processes always, the other user as f's mode says.
static bool may(const struct tmpfile *f, bool privileged, uint32_t mode_bit)
{
    return owns(f, privileged) || (f->mode & mode_bit);
}

// Whether add bytes of capacity fit once release bytes (release_unprivileged
// of them the unprivileged user's) are freed: STATUS_TMP_FULL past
// TMP_BYTES_MAX; for an unprivileged writer, STATUS_QUOTA_EXCEEDED past its
// share, which keeps TMP_RESERVE_PRIVILEGED for privileged writers, and
// STATUS_COMMITMENT_LIMIT when the memory would come out of the privileged
// reserve of memory (core/addrspace.h).
static NTSTATUS room_for(bool privileged, size_t add, size_t release, size_t release_unprivileged)
{
    if (add > TMP_BYTES_MAX || total_bytes - release + add > TMP_BYTES_MAX)
        return STATUS_TMP_FULL;
    if (privileged)
        return STATUS_SUCCESS;
    if (unprivileged_bytes - release_unprivileged + add > TMP_SHARE_UNPRIVILEGED)
        return STATUS_QUOTA_EXCEEDED;
    if (!as_reserve_admits(&process_current()->as, ALIGN_UP(add, PAGE_SIZE) / PAGE_SIZE))
        return STATUS_COMMITMENT_LIMIT;
    return STATUS_SUCCESS;
}

static NTSTATUS get_name(uint64_t uname, char name[TMP_NAME_MAX])
{
    NTSTATUS s = copy_string_from_user(name, uname, TMP_NAME_MAX);
    if (s == STATUS_INVALID_PARAMETER)
        return STATUS_TMP_BAD_NAME; // too long
    if (!NT_SUCCESS(s))
        return s;
    size_t n = strlen(name), p = strlen(PREFIX);
    if (n <= p || strncmp(name, PREFIX, p) != 0)
        return STATUS_TMP_BAD_NAME;
    for (size_t i = p; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return STATUS_TMP_BAD_NAME;
    }
    return STATUS_SUCCESS;
}

static struct tmpfile **find(const char *name)
{
    struct tmpfile **pp = &files;
    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    return pp;
}

// A file's memory: cap bytes, a multiple of the page.
static uint8_t *data_alloc(size_t cap)
{
    return sysmap_alloc(cap / PAGE_SIZE);
}

static void data_free(uint8_t *data, size_t cap)
{
    if (data)
        sysmap_free(data, cap / PAGE_SIZE);
}

static void remove_file(struct tmpfile **pp)
{
    struct tmpfile *f = *pp;
    *pp = f->next;
    total_bytes -= f->cap;
    unprivileged_bytes -= f->cap_unprivileged;
    data_free(f->data, f->cap);
    kfree(f);
}

// f's contents become len bytes from buf, owned by the caller's user with
// mode; or, on any failure (no room, no memory, a bad buffer), f stays as it
// was: the new contents are complete before the old ones are freed.
static NTSTATUS replace(struct tmpfile *f, bool privileged, uint32_t mode, uint64_t buf, size_t len)
{
    size_t cap = ALIGN_UP(len, PAGE_SIZE);
    NTSTATUS s = room_for(privileged, cap, f->cap, f->cap_unprivileged);
    uint8_t *data = NULL;
    if (NT_SUCCESS(s) && cap && !(data = data_alloc(cap)))
        s = STATUS_NO_MEMORY;
    if (NT_SUCCESS(s) && len)
        s = copy_from_user(data, buf, len);
    if (!NT_SUCCESS(s)) {
        data_free(data, cap);
        return s;
    }
    total_bytes -= f->cap;
    unprivileged_bytes -= f->cap_unprivileged;
    data_free(f->data, f->cap);
    f->data = data;
    f->size = len;
    f->cap = cap;
    f->cap_unprivileged = privileged ? 0 : cap;
    total_bytes += cap;
    unprivileged_bytes += f->cap_unprivileged;
    f->privileged = privileged;
    f->mode = mode;
    return STATUS_SUCCESS;
}

// len bytes from buf at f's end, the growth charged to the caller's user; or
// f unchanged. Capacity doubles, or grows to the exact fit when doubling would
// not fit (so a writer near its share or a full /tmp gets all it may).
static NTSTATUS append(struct tmpfile *f, bool privileged, uint64_t buf, size_t len)
{
    if (f->cap - f->size < len) {
        size_t fit = ALIGN_UP(f->size + len, PAGE_SIZE), cap = MAX(f->cap * 2, fit);
        if (!NT_SUCCESS(room_for(privileged, cap - f->cap, 0, 0)))
            cap = fit;
        NTSTATUS s = room_for(privileged, cap - f->cap, 0, 0);
        if (!NT_SUCCESS(s))
            return s;
        uint8_t *data = data_alloc(cap);
        if (!data)
            return STATUS_NO_MEMORY;
        memcpy(data, f->data, f->size);
        data_free(f->data, f->cap);
        total_bytes += cap - f->cap;
        if (!privileged) {
            f->cap_unprivileged += cap - f->cap;
            unprivileged_bytes += cap - f->cap;
        }
        f->data = data;
        f->cap = cap;
    }
    // A bad buffer leaves the contents as they were (the capacity grown).
    NTSTATUS s = copy_from_user(f->data + f->size, buf, len);
    if (NT_SUCCESS(s))
        f->size += len;
    return s;
}

// A new file called name, the caller's with mode, holding len bytes from buf,
// put at *pp; or nothing made.
static NTSTATUS create(struct tmpfile **pp, const char *name, bool privileged, uint32_t mode,
                       uint64_t buf, size_t len)
{
    struct tmpfile *f = kzalloc(sizeof *f);
    if (!f)
        return STATUS_NO_MEMORY;
    memcpy(f->name, name, sizeof f->name);
    NTSTATUS s = replace(f, privileged, mode, buf, len);
    if (!NT_SUCCESS(s)) {
        kfree(f);
        return s;
    }
    *pp = f;
    return STATUS_SUCCESS;
}

// One SysTmpWrite, the mutex held: a new name is created by anyone; an
// existing file is replaced (TMP_TRUNCATE) by its owner or a privileged
// process only, appended to as may allows, removed as owns allows.
static NTSTATUS tmp_write(struct tmpfile **pp, const char *name, uint64_t buf, size_t len,
                          uint32_t flags)
{
    struct tmpfile *f = *pp;
    bool privileged = caller_privileged();
    if (flags & TMP_REMOVE) {
        if (!f)
            return STATUS_OBJECT_NAME_NOT_FOUND;
        if (!owns(f, privileged))
            return STATUS_ACCESS_DENIED;
        remove_file(pp);
        return STATUS_SUCCESS;
    }
    if (!f)
        return create(pp, name, privileged, flags & MODE_BITS, buf, len);
    if (flags & TMP_TRUNCATE)
        return owns(f, privileged) ? replace(f, privileged, flags & MODE_BITS, buf, len)
                                   : STATUS_OBJECT_NAME_COLLISION;
    if (!may(f, privileged, TMP_OTHERS_APPEND))
        return STATUS_ACCESS_DENIED;
    return append(f, privileged, buf, len);
}

// (const char *name, const void *buf, size_t len, uint32_t flags)
uint64_t do_SysTmpWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    char name[TMP_NAME_MAX];
    uint64_t buf = a[1], len = a[2];
    uint32_t flags = (uint32_t)a[3];
    if (flags & ~(uint32_t)(TMP_TRUNCATE | TMP_REMOVE | MODE_BITS))
        return STATUS(STATUS_INVALID_PARAMETER);
    NTSTATUS s = get_name(a[0], name);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (!(flags & TMP_REMOVE) && !user_range_ok(buf, len))
        return STATUS(STATUS_ACCESS_VIOLATION);
    mutex_lock(&tmp_mutex);
    s = tmp_write(find(name), name, buf, len, flags);
    mutex_unlock(&tmp_mutex);
    return STATUS(s);
}

// (const char *name, uint64_t offset, void *buf, size_t len, size_t *got)
uint64_t do_SysTmpRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    char name[TMP_NAME_MAX];
    size_t got = 0;
    NTSTATUS s = copy_to_user(a[4], &got, sizeof got);
    if (NT_SUCCESS(s))
        s = get_name(a[0], name);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    mutex_lock(&tmp_mutex);
    struct tmpfile *f = *find(name);
    if (!f) {
        s = STATUS_OBJECT_NAME_NOT_FOUND;
    } else if (!may(f, caller_privileged(), TMP_OTHERS_READ)) {
        s = STATUS_ACCESS_DENIED;
    } else if (a[1] < f->size) {
        got = MIN(a[3], f->size - a[1]);
        s = copy_to_user(a[2], f->data + a[1], got);
    }
    mutex_unlock(&tmp_mutex);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    return STATUS(copy_to_user(a[4], &got, sizeof got));
}
