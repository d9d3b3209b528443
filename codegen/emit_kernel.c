/* One Tile IR kernel → one LLVM function: the signature and ABI, the value map, the op
 * dispatch, the NVVM kernel annotations, and the small LLVM helpers every emitter uses. */
#include "cg.h"

#include <string.h>

void cg_unsupported(cg_ctx *c, const ir_op *op, const char *what) {
  su_loc loc = {c->src, UINT32_MAX, 0, op->loc.line, op->loc.col};
  su_error(c->diags, loc, "%s is not supported yet by the GPU back end", what);
  su_note(c->diags, loc, "the interpreter runs it (TK_INTERPRET=1)");
  c->failed = true;
}

cg_val cg_get(cg_ctx *c, const ir_value *v) {
  SU_ASSERT(v->id >= 0 && v->id < c->nvalues && c->vals[v->id].v);
  return c->vals[v->id];
}

LLVMValueRef cg_slot(cg_ctx *c, const ir_value *v, int j) {
  cg_val x = cg_get(c, v);
  return x.n == 1 ? x.v[0] : x.v[j];
}

void cg_set(cg_ctx *c, const ir_value *v, LLVMValueRef *slots, int n) {
  SU_ASSERT(v->id >= 0 && v->id < c->nvalues);
  c->vals[v->id] = (cg_val){slots, n};
}

LLVMValueRef *cg_slots(cg_ctx *c, int n) { return SU_NEW_ARRAY(c->arena, LLVMValueRef, n); }

LLVMBasicBlockRef cg_block(cg_ctx *c, const char *name) {
  return LLVMAppendBasicBlockInContext(c->llc, c->fn, name);
}

LLVMValueRef cg_intrinsic(cg_ctx *c, const char *name, LLVMTypeRef *over, int nover,
                          LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) su_fatal("unknown LLVM intrinsic %s", name);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, over, (size_t)nover);
  LLVMTypeRef ty = LLVMIntrinsicGetType(c->llc, id, over, (size_t)nover);
  return LLVMBuildCall2(c->b, ty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef cg_call(cg_ctx *c, const char *name, LLVMTypeRef ret, LLVMValueRef *args,
                     int nargs) {
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) {
    LLVMTypeRef params[4];
    SU_ASSERT(nargs <= 4);
    for (int i = 0; i < nargs; i++) params[i] = LLVMTypeOf(args[i]);
    fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(ret, params, (unsigned)nargs, false));
  }
  return LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)nargs, "");
}

void cg_barrier(cg_ctx *c) {
  /* the other warpgroups wait for this one's pass before they could reach it */
  if (c->in_turn) su_fatal("a barrier of every consumer inside a warpgroup's turn would never complete");
  if (!c->bar_id) {
    cg_intrinsic(c, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    return;
  }
  /* a warp_spec region's own barrier: the other region's threads never reach it */
  LLVMValueRef args[2] = {cg_i32(c, c->bar_id), cg_i32(c, c->bar_threads)};
  cg_intrinsic(c, "llvm.nvvm.barrier.sync.cnt", NULL, 0, args, 2);
}

/* Every tile's layout must describe this kernel's CTA; one that does not is reported
 * once, at the first op that has it. */
static bool layout_fits(cg_ctx *c, const ir_op *op, const ir_value *v) {
  cg_layout l;
  if (v->type->kind != IR_TILE || cg_layout_resolve(v->type->layout, v->type, c->threads, c->vec, &l))
    return true;
  char what[96];
  snprintf(what, sizeof what, "a layout that does not fit %d warps of 32 threads", c->threads / CG_WARP);
  cg_unsupported(c, op, what);
  return false;
}

static bool layouts_fit(cg_ctx *c, const ir_op *op) {
  for (int i = 0; i < op->noperands; i++)
    if (!layout_fits(c, op, op->operands[i])) return false;
  for (int i = 0; i < op->nresults; i++)
    if (!layout_fits(c, op, op->results[i])) return false;
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++)
      if (!layout_fits(c, op, op->regions[r]->args[i])) return false;
  return true;
}

static void emit_op(cg_ctx *c, const ir_op *op) {
  c->op = op;
  if (!layouts_fit(c, op)) return;
  switch (op->opc) {
  case IR_CONST: case IR_PROGRAM_ID: case IR_NUM_PROGRAMS: case IR_ARANGE: case IR_SPLAT:
  case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_TRANS: case IR_SLICE: case IR_JOIN: case IR_GATHER:
  case IR_CONVERT_LAYOUT:
    cg_emit_value_op(c, op);
    return;
  case IR_LOAD: case IR_STORE: case IR_ATOMIC: case IR_ATOMIC_CAS: case IR_SLOT_STORE: case IR_SLOT_LOAD:
    cg_emit_memory(c, op);
    return;
  case IR_FOR: case IR_IF:
    cg_emit_control(c, op);
    return;
  case IR_REDUCE: case IR_ARGREDUCE: case IR_WARP_ANY:
    cg_emit_reduce(c, op);
    return;
  case IR_SCAN:
    cg_emit_scan(c, op);
    return;
  case IR_DOT:
    cg_emit_dot(c, op);
    return;
  case IR_SMEM_ALLOC: case IR_SMEM_STORE: case IR_SMEM_LOAD: case IR_SMEM_ATOMIC: case IR_MBAR_ALLOC:
  case IR_MBAR_WAIT: case IR_MBAR_ARRIVE: case IR_MBAR_EXPECT: case IR_TMA_LOAD:
  case IR_TMA_STORE: case IR_BULK_COMMIT: case IR_BULK_WAIT:
  case IR_CP_ASYNC: case IR_CP_ASYNC_COMMIT: case IR_CP_ASYNC_WAIT: case IR_BARRIER:
  case IR_FENCE_ASYNC: case IR_WG_TURN:
    cg_emit_async(c, op);
    return;
  case IR_WGMMA: case IR_WGMMA_COMMIT: case IR_WGMMA_WAIT:
    cg_emit_wgmma(c, op);
    return;
  case IR_MMA:
    cg_emit_mma(c, op);
    return;
  case IR_WARP_SPEC:
    cg_emit_warp_spec(c, op);
    return;
  case IR_TENSOR_MAP: case IR_GRID_SIZE: case IR_SCRATCH: case IR_WORKSPACE:
    cg_emit_abi_value(c, op);
    return;
  case IR_CLUSTER_RANK: case IR_CLUSTER_REDUCE:
    cg_emit_cluster(c, op);
    return;
  case IR_HISTOGRAM: {
    /* the histogram pass lowers it for every GPU compile; a --passes list may leave it out */
    su_loc loc = {c->src, UINT32_MAX, 0, op->loc.line, op->loc.col};
    su_error(c->diags, loc, "'histogram' reached the GPU back end unlowered: the 'histogram' pass "
             "must run after tiling");
    c->failed = true;
    return;
  }
  case IR_PRINT: case IR_ASSERT: {
    char what[64];
    snprintf(what, sizeof what, "'%s'", ir_op_info(op->opc)->name);
    cg_unsupported(c, op, what);
    return;
  }
  case IR_YIELD: case IR_RETURN:
    SU_UNREACHABLE(); /* terminators are read by their region's owner */
  default:
    SU_ASSERT(ir_op_info(op->opc)->traits & IR_ELEM);
    cg_emit_elementwise(c, op);
    return;
  }
}

const ir_op *cg_emit_block(cg_ctx *c, const ir_block *blk) {
  for (const ir_op *op = blk->first; op; op = op->next) {
    if (ir_op_info(op->opc)->traits & IR_TERM) return op;
    emit_op(c, op);
    if (c->failed) return NULL;
  }
  return NULL;
}

static LLVMValueRef make_function(cg_ctx *c, const ir_func *f, const cg_abi *abi) {
  int n = f->body->nargs, total = n + cg_abi_hidden(abi);
  LLVMTypeRef *params = SU_NEW_ARRAY(c->arena, LLVMTypeRef, total ? total : 1);
  for (int i = 0; i < n; i++) {
    const ir_type *t = f->body->args[i]->type;
    params[i] = t->kind == IR_PTR ? cg_ptr_type(c) : cg_mem_type(c, t->dtype);
  }
  /* hidden arguments: tensor maps by value (CUtensorMap: 128 bytes, 64-aligned), then a
   * persistent kernel's launched grid */
  for (int i = 0; i < abi->ntmaps; i++) params[n + i] = LLVMPointerTypeInContext(c->llc, 0);
  for (int i = 0; abi->persistent && i < 3; i++) params[n + abi->ntmaps + i] = LLVMInt32TypeInContext(c->llc);
  int buffers = n + abi->ntmaps + (abi->persistent ? 3 : 0);
  if (abi->scratch) params[buffers++] = cg_ptr_type(c); /* -fno-fuse's scratch buffer */
  if (abi->workspace) params[buffers++] = cg_ptr_type(c); /* the workspace ops' buffer */
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c->llc), params, (unsigned)total, false);
  LLVMValueRef fn = LLVMAddFunction(c->mod, f->name, fty);
  LLVMTypeRef map_type = LLVMArrayType2(LLVMInt8TypeInContext(c->llc), CG_TMAP_BYTES);
  unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
  unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
  for (int i = 0; i < abi->ntmaps; i++) {
    unsigned at = (unsigned)(n + i) + 1;
    LLVMAddAttributeAtIndex(fn, at, LLVMCreateTypeAttribute(c->llc, byval, map_type));
    LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(c->llc, align, CG_TMAP_ALIGN));
  }
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  /* A pointer is as aligned as its facts say (its element's alignment when unspecialized):
   * LLVM's own vectorizer must not assume more than axis.c does. */
  unsigned align_kind = LLVMGetEnumAttributeKindForName("align", 5);
  for (int i = 0; i < n; i++) {
    const ir_type *t = f->body->args[i]->type;
    if (t->kind != IR_PTR) continue;
    int align = ir_dtype_bytes(t->elem->dtype);
    if (ir_param_div(f, i) > align) align = ir_param_div(f, i);
    LLVMAddAttributeAtIndex(fn, (unsigned)i + 1,
                            LLVMCreateEnumAttribute(c->llc, align_kind, (uint64_t)align));
  }
  return fn;
}

/* !nvvm.annotations = {fn, "kernel", 1}, {fn, "maxntidx", threads}: what marks an entry
 * and bounds its block size for the register allocator. */
static void annotate(cg_ctx *c, LLVMValueRef fn, const char *key, int value) {
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(c->llc, key, strlen(key)),
      LLVMValueAsMetadata(cg_i32(c, value)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(c->llc, LLVMMDNodeInContext2(c->llc, md, 3));
  LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", node);
}

/* {fn, "grid_constant", !{i32 argno...}} (1-based): the tensor maps are read in place, in
 * the parameter space, by address (cvta.param), as the TMA engine needs. */
static void annotate_grid_constants(cg_ctx *c, LLVMValueRef fn, int first, int n) {
  if (!n) return;
  LLVMMetadataRef *nums = SU_NEW_ARRAY(c->arena, LLVMMetadataRef, n);
  for (int i = 0; i < n; i++) nums[i] = LLVMValueAsMetadata(cg_i32(c, first + i + 1));
  const char key[] = "grid_constant";
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(c->llc, key, sizeof key - 1),
      LLVMMDNodeInContext2(c->llc, nums, (size_t)n),
  };
  LLVMValueRef node = LLVMMetadataAsValue(c->llc, LLVMMDNodeInContext2(c->llc, md, 3));
  LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", node);
}

/* True if name is a PTX identifier: [a-zA-Z][a-zA-Z0-9_$]* or [_$%][a-zA-Z0-9_$]+ (the
 * PTX ISA's "Identifiers"; '%' is left to the compiler's own names). A .tkir kernel may be
 * called anything, and LLVM aborts on a symbol PTX cannot spell. */
static bool ptx_identifier(const char *name) {
  const char *p = name;
  bool alpha0 = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
  if (!alpha0 && *p != '_' && *p != '$') return false;
  for (p++; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '$'))
      return false;
  return alpha0 || p - name > 1;
}

void cg_emit_kernel(cg_ctx *c, ir_func *f) {
  if (!ptx_identifier(f->name)) {
    su_loc loc = {c->src, UINT32_MAX, 0, f->loc.line, f->loc.col};
    su_error(c->diags, loc, "kernel name '%s' is not a PTX identifier (a letter, '_' or '$', "
             "then letters, digits, '_' or '$'): the GPU back end cannot emit it", f->name);
    c->failed = true;
    return;
  }
  c->f = f;
  c->threads = CG_WARP * f->num_warps;
  cg_abi abi;
  cg_abi_of(f, c->arch, &abi);
  c->launch_threads = abi.threads;
  c->bar_id = 0;
  c->single_thread = false;
  c->tmaps_seen = 0;
  c->nvalues = ir_number_values(f);
  c->vals = SU_NEW_ARRAY(c->arena, cg_val, c->nvalues);
  c->axis = SU_NEW_ARRAY(c->arena, cg_axis, c->nvalues);
  cg_layout_choose(c, f);
  cg_axis_analyze(c, f);

  c->fn = make_function(c, f, &abi);
  LLVMPositionBuilderAtEnd(c->b, cg_block(c, "entry"));
  c->tid = cg_intrinsic(c, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
  if (tg_has(c->arch, TG_GRIDDEP)) {
    /* A pdl kernel may be running before its predecessor is done: nothing of its own
     * comes before the wait. Every kernel then lets its successor be scheduled: a
     * successor launched as pdl waits for this one's end anyway, so the trigger only
     * moves its launch (onto SMs this grid's last programs free) earlier, and with an
     * ordinary launch it does nothing. */
    if (abi.pdl) cg_ptx_griddep_wait(c);
    cg_ptx_griddep_launch_dependents(c);
  }
  cg_cluster_begin(c);
  cg_smem_begin_kernel(c);
  for (int i = 0; i < f->body->nargs; i++) {
    const ir_value *p = f->body->args[i];
    LLVMValueRef *s = cg_slots(c, 1);
    s[0] = LLVMGetParam(c->fn, (unsigned)i);
    if (p->type->kind == IR_SCALAR && p->type->dtype == TK_I1)
      s[0] = LLVMBuildTrunc(c->b, s[0], LLVMInt1TypeInContext(c->llc), "");
    if (f->param_names && f->param_names[i])
      LLVMSetValueName2(LLVMGetParam(c->fn, (unsigned)i), f->param_names[i],
                        strlen(f->param_names[i]));
    cg_set(c, p, s, 1);
  }
  for (int i = 0; abi.persistent && i < 3; i++)
    c->grid[i] = LLVMGetParam(c->fn, (unsigned)(f->body->nargs + abi.ntmaps + i));
  unsigned buffers = (unsigned)(f->body->nargs + abi.ntmaps + (abi.persistent ? 3 : 0));
  c->scratch = abi.scratch ? LLVMGetParam(c->fn, buffers++) : NULL;
  c->workspace = abi.workspace ? LLVMGetParam(c->fn, buffers) : NULL;
  cg_emit_block(c, f->body);
  cg_smem_end_kernel(c);
  if (c->failed) return;
  cg_cluster_end(c);
  LLVMBuildRetVoid(c->b);
  annotate(c, c->fn, "kernel", 1);
  annotate(c, c->fn, "maxntidx", c->launch_threads);
  /* programs_per_sm CTAs per SM (one for a warp-specialized kernel unless asked): the
   * register cap at entry, which setmaxnreg's split of the register file assumes */
  if (f->programs_per_sm > 0 || abi.warp_spec)
    annotate(c, c->fn, "minctasm", f->programs_per_sm > 0 ? f->programs_per_sm : 1);
  annotate_grid_constants(c, c->fn, f->body->nargs, abi.ntmaps);
  cg_abi_note(c, f, &abi);
}
