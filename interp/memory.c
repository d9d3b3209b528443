/* The buffer table behind interpreter device addresses, and the bounds check every
 * kernel memory access goes through. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t *data;
  size_t size;
  bool live;
  uint32_t next_free; /* slot + 1 of the next freed slot in the quarantine; 0 ends it */
} buffer;

/* A buffer id is (space << SLOT_BITS) | slot: the space names the table (each ip_memory
 * gets the next of 255 in turn), so an address from another context's table is told
 * apart from one of this table; the slot indexes it (from 1). Freed slots are reused, so
 * that a long-lived table does not run out, but only after QUARANTINE later frees, oldest
 * first (as ASan's allocator does): a stale pointer is caught as use-after-free for as
 * long as that, instead of silently reaching a newer buffer at once. */
struct ip_memory {
  buffer *bufs; /* bufs[slot - 1] */
  uint32_t n, cap;
  uint32_t space;
  uint32_t free_head, free_tail, nfree; /* the quarantine, a FIFO of freed slots */
  uint32_t workspace; /* the buffer id of the workspace ops' buffer (ip_mem_workspace), 0: none */
  uint64_t workspace_owner; /* the ir_func uid of the kernel that used it last */
};

enum {
  SLOT_BITS = 63 - IP_ADDR_BITS - IP_SPACE_BITS,
  MAX_BUFFERS = (1u << SLOT_BITS) - 1,
  QUARANTINE = 1024
};
static const uint64_t OFFSET_MASK = (UINT64_C(1) << IP_ADDR_BITS) - 1;

ip_memory *ip_memory_new(void) {
  static _Atomic uint32_t next_space;
  ip_memory *mem = calloc(1, sizeof *mem);
  if (!mem) return NULL;
  mem->space = next_space++ % ((1u << IP_SPACE_BITS) - 1) + 1;
  return mem;
}

void ip_memory_free(ip_memory *mem) {
  if (!mem) return;
  for (uint32_t i = 0; i < mem->n; i++) free(mem->bufs[i].data);
  free(mem->bufs);
  free(mem);
}

void ip_mem_split(tk_devptr p, uint32_t *buf, int64_t *off) {
  *buf = (uint32_t)(p >> IP_ADDR_BITS);
  *off = (int64_t)(p & OFFSET_MASK);
}

tk_devptr ip_mem_join(uint32_t buf, int64_t off) {
  return ((tk_devptr)buf << IP_ADDR_BITS) + (uint64_t)off;
}

static uint32_t space_of(uint32_t id) { return id >> SLOT_BITS; }

/* A slot for a new buffer: the oldest in the quarantine once it is full, else a new one;
 * 0 when the table cannot grow. */
static uint32_t take_slot(ip_memory *mem) {
  if (mem->nfree > QUARANTINE || (mem->nfree && mem->n == MAX_BUFFERS)) {
    uint32_t slot = mem->free_head;
    mem->free_head = mem->bufs[slot - 1].next_free;
    if (!mem->free_head) mem->free_tail = 0;
    mem->nfree--;
    return slot;
  }
  if (mem->n == MAX_BUFFERS) return 0;
  if (mem->n == mem->cap) {
    uint32_t cap = mem->cap ? mem->cap * 2 : 16;
    buffer *b = realloc(mem->bufs, cap * sizeof *b);
    if (!b) return 0;
    mem->bufs = b;
    mem->cap = cap;
  }
  mem->bufs[mem->n] = (buffer){0};
  return ++mem->n;
}

bool ip_mem_alloc(ip_memory *mem, size_t bytes, tk_devptr *out, su_buf *err) {
  if (bytes == 0 || bytes > OFFSET_MASK) {
    su_buf_printf(err, "cannot allocate %zu bytes (the interpreter allows 1 to %llu)", bytes,
                  (unsigned long long)OFFSET_MASK);
    return false;
  }
  uint8_t *data = calloc(1, bytes);
  if (!data) {
    su_buf_printf(err, "out of host memory allocating %zu bytes", bytes);
    return false;
  }
  uint32_t slot = take_slot(mem);
  if (!slot) {
    free(data);
    su_buf_printf(err, "too many live allocations (the interpreter allows %u)", MAX_BUFFERS);
    return false;
  }
  mem->bufs[slot - 1] = (buffer){data, bytes, true, 0};
  *out = ip_mem_join(mem->space << SLOT_BITS | slot, 0);
  return true;
}

/* The buffer with this id, live or freed; NULL if the id was never handed out. */
static buffer *find(const ip_memory *mem, uint32_t id) {
  uint32_t slot = id & MAX_BUFFERS;
  return space_of(id) == mem->space && slot >= 1 && slot <= mem->n ? &mem->bufs[slot - 1] : NULL;
}

bool ip_mem_free(ip_memory *mem, tk_devptr p, su_buf *err) {
  uint32_t id;
  int64_t off;
  ip_mem_split(p, &id, &off);
  buffer *b = find(mem, id);
  if (!b || off != 0) {
    su_buf_printf(err, "0x%llx is not an address returned by tk_malloc%s",
                  (unsigned long long)p, ip_mem_foreign(mem, p) ? " on this context" : "");
    return false;
  }
  if (!b->live) {
    su_buf_printf(err, "0x%llx was already freed", (unsigned long long)p);
    return false;
  }
  free(b->data);
  b->data = NULL;
  b->live = false;
  uint32_t slot = id & MAX_BUFFERS;
  b->next_free = 0;
  if (mem->free_tail)
    mem->bufs[mem->free_tail - 1].next_free = slot;
  else
    mem->free_head = slot;
  mem->free_tail = slot;
  mem->nfree++;
  return true;
}

bool ip_mem_workspace(ip_memory *mem, size_t bytes, uint64_t owner, uint32_t *id, su_buf *err) {
  const buffer *b = mem->workspace ? find(mem, mem->workspace) : NULL;
  bool have = b && b->live; /* (b moves if ip_mem_alloc grows the table) */
  if (have && b->size >= bytes) {
    /* Another kernel's slots may lie where this one keeps its counters: zero, as new. */
    if (mem->workspace_owner != owner) memset(b->data, 0, b->size);
    mem->workspace_owner = owner;
    *id = mem->workspace;
    return true;
  }
  /* too small: a new zeroed one, as the GPU runtime grows its own (what the old one held
   * is the launches' business to have reset) */
  tk_devptr p;
  if (!ip_mem_alloc(mem, bytes, &p, err)) return false;
  if (have && !ip_mem_free(mem, ip_mem_join(mem->workspace, 0), err)) return false;
  int64_t off;
  ip_mem_split(p, &mem->workspace, &off);
  mem->workspace_owner = owner;
  *id = mem->workspace;
  return true;
}

void *ip_mem_host(ip_memory *mem, tk_devptr p, size_t bytes, su_buf *err) {
  uint32_t id;
  int64_t off;
  ip_mem_split(p, &id, &off);
  buffer *b = find(mem, id);
  if (!b || !b->live) {
    su_buf_printf(err, "0x%llx is not inside a live buffer from tk_malloc%s",
                  (unsigned long long)p,
                  ip_mem_foreign(mem, p) ? " on this context (it is another context's)" : "");
    return NULL;
  }
  if ((uint64_t)off > b->size || bytes > b->size - (uint64_t)off) {
    su_buf_printf(err, "%zu bytes at offset %lld run past the end of the %zu-byte buffer", bytes,
                  (long long)off, b->size);
    return NULL;
  }
  return b->data + off;
}

bool ip_mem_foreign(const ip_memory *mem, tk_devptr p) {
  uint32_t id;
  int64_t off;
  ip_mem_split(p, &id, &off);
  return p != 0 && space_of(id) != 0 && space_of(id) != mem->space;
}

bool ip_mem_valid_arg(const ip_memory *mem, tk_devptr p) {
  uint32_t id;
  int64_t off;
  ip_mem_split(p, &id, &off);
  if (p == 0) return true;
  const buffer *b = find(mem, id);
  return b && b->live && (uint64_t)off <= b->size;
}

bool ip_mem_buffer(const ip_memory *mem, uint32_t id, uint8_t **data, uint64_t *size) {
  const buffer *b = find(mem, id);
  if (!b || !b->live) return false;
  *data = b->data;
  *size = b->size;
  return true;
}

const char *ip_mem_access(ip_memory *mem, uint32_t id, int64_t off, int size, void **host,
                          su_buf *why) {
  buffer *b = find(mem, id);
  if (id == 0) {
    su_buf_printf(why, "the pointer is null plus %lld bytes", (long long)off);
    return "null-pointer";
  }
  if (id == IP_BUF_WRAPPED) {
    su_buf_printf(why, "the pointer's byte offset overflowed 64 bits in pointer arithmetic");
    return "pointer-overflow";
  }
  if (!b) {
    su_buf_printf(why, "the pointer does not point into any buffer");
    return "wild-pointer";
  }
  if (!b->live) {
    su_buf_printf(why, "the %zu-byte buffer was freed", b->size);
    return "use-after-free";
  }
  if (off % size != 0) {
    su_buf_printf(why, "byte offset %lld is not a multiple of the element size, %d bytes",
                  (long long)off, size);
    return "misaligned";
  }
  if (off < 0) {
    su_buf_printf(why, "element offset %lld is before the start of a %zu-byte buffer",
                  (long long)(off / size), b->size);
    return "out-of-bounds";
  }
  if ((uint64_t)off + (uint64_t)size > b->size) {
    su_buf_printf(why, "element offset %lld is past the end of a %zu-byte buffer",
                  (long long)(off / size), b->size);
    return "out-of-bounds";
  }
  *host = b->data + off;
  return NULL;
}
