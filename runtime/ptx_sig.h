/*
 * runtime/ptx_sig.h — reads the kernel signatures out of PTX text, so that kernels loaded
 * ahead of time (tk_module_load_ptx, with no IR) can still be looked up by name and have
 * their launch arguments checked and packed.
 *
 * Contract:
 *  - Only `.entry` declarations are read: the name, each `.param` (its PTX type, and
 *    whether it is marked `.ptr`), and a `.maxntid`/`.reqntid` x-dimension if one follows.
 *  - PTX does not record signedness, so integer parameters come back as signed types
 *    (.u32/.s32/.b32 → i32, …); a 64-bit parameter marked `.ptr` (what LLVM emits for
 *    pointer arguments) is TK_PTR with an unknown pointee (TK_NDTYPE); a 2-byte `.b8` array
 *    (LLVM's form for f16 and bf16) is TK_F16. Other aggregates make the entry unreadable
 *    (skipped), except tk's own tensor maps: byte arrays (TK_NDTYPE) where the entry's
 *    `.tk.abi` line (codegen.h) puts its hidden tensor-map arguments.
 *  - Text that is not PTX yields no entries; nothing here reads past len or aborts.
 * Prefix: rt_ptx_.
 */
#ifndef TK_RUNTIME_PTX_SIG_H
#define TK_RUNTIME_PTX_SIG_H

#include "runtime.h"

typedef struct {
  const char *name;
  ir_sig_param *params; /* never specializable: AOT PTX has one variant */
  int nparams;
  int num_threads; /* from .maxntid / .reqntid; 0 when absent */
} rt_ptx_entry;

/* Parses every .entry of ptx (len bytes) into an arena array; returns how many (and the
 * array in *out). A malformed entry is skipped. */
int rt_ptx_entries(su_arena *a, const char *ptx, size_t len, rt_ptx_entry **out);

#endif
