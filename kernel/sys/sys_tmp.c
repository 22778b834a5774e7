// /tmp: a RAM file system of flat files, for what must outlive a process
// (`profile record` writes the PMC log to /tmp/pmc.log, `profile report`
// reads it). Names are "/tmp/" and then letters, digits, '.', '_' or '-';
// files live until removed or the machine stops; all of them together hold at
// most TMP_BYTES_MAX bytes. Every file is kmalloc'd, grown by doubling.
#include "lib/string.h"

#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/uaccess.h"

#include "sys/syscall.h"

#define PREFIX "/tmp/"

struct tmpfile {
    char name[TMP_NAME_MAX];
    uint8_t *data;
    size_t size, cap;
    struct tmpfile *next;
};

static struct mutex tmp_mutex = MUTEX_INIT("tmpfs");
static struct tmpfile *files;
static size_t total_bytes; // capacity of every file

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

static void remove_file(struct tmpfile **pp)
{
    struct tmpfile *f = *pp;
    *pp = f->next;
    total_bytes -= f->cap;
    kfree(f->data);
    kfree(f);
}

// (const char *name, const void *buf, size_t len, uint32_t flags)
uint64_t do_SysTmpWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    char name[TMP_NAME_MAX];
    uint64_t buf = a[1], len = a[2];
    uint32_t flags = (uint32_t)a[3];
    if (flags & ~(uint32_t)(TMP_TRUNCATE | TMP_REMOVE))
        return STATUS(STATUS_INVALID_PARAMETER);
    NTSTATUS s = get_name(a[0], name);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (!(flags & TMP_REMOVE) && !user_range_ok(buf, len))
        return STATUS(STATUS_ACCESS_VIOLATION);
    mutex_lock(&tmp_mutex);
    struct tmpfile **pp = find(name), *f = *pp;
    if (flags & TMP_REMOVE) {
        if (f)
            remove_file(pp);
        else
            s = STATUS_OBJECT_NAME_NOT_FOUND;
        goto out;
    }
    if (!f) {
        f = kzalloc(sizeof *f);
        if (!f) {
            s = STATUS_NO_MEMORY;
            goto out;
        }
        memcpy(f->name, name, sizeof f->name);
        f->next = files;
        files = f;
    }
    if (flags & TMP_TRUNCATE)
        f->size = 0;
    if (f->cap - f->size < len) {
        size_t cap = MAX(MAX(f->cap * 2, f->size + len), (size_t)4096);
        if (len > TMP_BYTES_MAX || total_bytes - f->cap + cap > TMP_BYTES_MAX) {
            s = STATUS_TMP_FULL;
            goto out;
        }
        uint8_t *data = kmalloc(cap);
        if (!data) {
            s = STATUS_NO_MEMORY;
            goto out;
        }
        memcpy(data, f->data, f->size);
        kfree(f->data);
        total_bytes += cap - f->cap;
        f->data = data;
        f->cap = cap;
    }
    s = copy_from_user(f->data + f->size, buf, len); // a bad buffer leaves the file as it was
    if (NT_SUCCESS(s))
        f->size += len;
out:
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
    } else if (a[1] < f->size) {
        got = MIN(a[3], f->size - a[1]);
        s = copy_to_user(a[2], f->data + a[1], got);
    }
    mutex_unlock(&tmp_mutex);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    return STATUS(copy_to_user(a[4], &got, sizeof got));
}
