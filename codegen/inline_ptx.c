/* The PTX instructions LLVM 19 has no intrinsic for (mbarrier parity waits and expected
 * bytes, remote arrives and stores into a cluster peer's shared memory, TMA box copies, the async-proxy fence, wgmma and its fence/commit/wait,
 * setmaxnreg, griddepcontrol; the paired f16/bf16 rounding, the fp8 cvts and div.full.f32), each kind written here once
 * as inline assembly; the emitters call these and never spell PTX themselves. Every
 * statement is `sideeffect` (LLVM must neither move it across memory accesses nor drop
 * it), and those that order memory clobber it, except the pure computations (cvt, div),
 * which LLVM may merge, move or drop like the instructions they are. Shared
 * addresses travel as 32-bit integers (the .shared window is 32-bit). */
#include "cg.h"

#include <string.h>

LLVMValueRef cg_asm(cg_ctx *c, LLVMTypeRef ret, const char *text, const char *cons,
                    LLVMValueRef *args, int nargs) {
  LLVMTypeRef pt[CG_ASM_MAX_ARGS];
  SU_ASSERT(nargs <= CG_ASM_MAX_ARGS);
  for (int i = 0; i < nargs; i++) pt[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ft = LLVMFunctionType(ret ? ret : LLVMVoidTypeInContext(c->llc), pt, (unsigned)nargs, false);
  LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), true, false,
                                     LLVMInlineAsmDialectATT, false);
  return LLVMBuildCall2(c->b, ft, fn, args, (unsigned)nargs, "");
}

LLVMValueRef cg_asm_pure(cg_ctx *c, LLVMTypeRef ret, const char *text, const char *cons,
                         LLVMValueRef *args, int nargs) {
  LLVMTypeRef pt[CG_ASM_MAX_ARGS];
  SU_ASSERT(nargs <= CG_ASM_MAX_ARGS);
  for (int i = 0; i < nargs; i++) pt[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)nargs, false);
  LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), false, false,
                                     LLVMInlineAsmDialectATT, false);
  LLVMValueRef r = LLVMBuildCall2(c->b, ft, fn, args, (unsigned)nargs, "");
  unsigned memory = LLVMGetEnumAttributeKindForName("memory", 6);
  LLVMAddCallSiteAttribute(r, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->llc, memory, 0));
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddCallSiteAttribute(r, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->llc, nounwind, 0));
  return r;
}

LLVMValueRef cg_ptx_cvt_f64_f32(cg_ctx *c, LLVMValueRef x) {
  return cg_asm_pure(c, LLVMDoubleTypeInContext(c->llc), "cvt.f64.f32 $0, $1;", "=d,f", &x, 1);
}

LLVMValueRef cg_ptx_cvt_rz_f32(cg_ctx *c, LLVMValueRef x, tk_dtype from) {
  static const char *TEXT[] = {"cvt.rz.f32.s32 $0, $1;", "cvt.rz.f32.u32 $0, $1;", "cvt.rz.f32.s64 $0, $1;",
                               "cvt.rz.f32.u64 $0, $1;", "cvt.rz.f32.f64 $0, $1;"};
  static const char *CONS[] = {"=f,r", "=f,r", "=f,l", "=f,l", "=f,d"};
  int k = from == TK_F64 ? 4 : (ir_dtype_bits(from) == 64 ? 2 : 0) + !ir_dtype_is_signed(from);
  SU_ASSERT(from == TK_F64 || (ir_dtype_is_int(from) && ir_dtype_bits(from) >= 32));
  return cg_asm_pure(c, LLVMFloatTypeInContext(c->llc), TEXT[k], CONS[k], &x, 1);
}

LLVMValueRef cg_ptx_div_full(cg_ctx *c, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef args[2] = {x, y};
  return cg_asm_pure(c, LLVMTypeOf(x), "div.full.f32 $0, $1, $2;", "=f,f,f", args, 2);
}

LLVMValueRef cg_ptx_cvt_rn_x2(cg_ctx *c, tk_dtype dt, LLVMValueRef hi, LLVMValueRef lo) {
  const char *text = dt == TK_F16 ? "cvt.rn.f16x2.f32 $0, $1, $2;" : "cvt.rn.bf16x2.f32 $0, $1, $2;";
  LLVMValueRef args[2] = {hi, lo}; /* the first source goes to the upper half */
  return cg_asm_pure(c, LLVMInt32TypeInContext(c->llc), text, "=r,f,f", args, 2);
}

LLVMValueRef cg_ptx_cvt_f8_f32(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  const char *text = dt == TK_F8E4M3 ? "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;"
                                     : "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;";
  LLVMValueRef args[2] = {LLVMConstReal(LLVMFloatTypeInContext(c->llc), 0.0), x}; /* x: low byte */
  LLVMValueRef pair = cg_asm_pure(c, LLVMInt16TypeInContext(c->llc), text, "=h,f,f", args, 2);
  return LLVMBuildTrunc(c->b, pair, LLVMInt8TypeInContext(c->llc), "");
}

LLVMValueRef cg_ptx_cvt_f16_f8(cg_ctx *c, tk_dtype dt, LLVMValueRef b) {
  const char *text = dt == TK_F8E4M3 ? "cvt.rn.f16x2.e4m3x2 $0, $1;" : "cvt.rn.f16x2.e5m2x2 $0, $1;";
  LLVMValueRef pair = LLVMBuildZExt(c->b, b, LLVMInt16TypeInContext(c->llc), "");
  LLVMValueRef h2 = cg_asm_pure(c, LLVMInt32TypeInContext(c->llc), text, "=r,h", &pair, 1);
  LLVMValueRef lo = LLVMBuildTrunc(c->b, h2, LLVMInt16TypeInContext(c->llc), "");
  return LLVMBuildBitCast(c->b, lo, LLVMHalfTypeInContext(c->llc), "");
}

LLVMValueRef cg_shared_addr(cg_ctx *c, LLVMValueRef p) {
  return LLVMBuildPtrToInt(c->b, p, LLVMInt32TypeInContext(c->llc), "");
}

void cg_ptx_mbar_init_fence(cg_ctx *c) {
  cg_asm(c, NULL, "fence.mbarrier_init.release.cluster;", "~{memory}", NULL, 0);
}

LLVMValueRef cg_ptx_mbar_try_wait(cg_ctx *c, LLVMValueRef bar, LLVMValueRef parity) {
  LLVMValueRef args[2] = {bar, parity};
  return cg_asm(c, LLVMInt32TypeInContext(c->llc),
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                "selp.u32 $0, 1, 0, p;\n}",
                "=r,r,r,~{memory}", args, 2);
}

LLVMValueRef cg_ptx_mbar_try_wait_cluster(cg_ctx *c, LLVMValueRef bar, LLVMValueRef parity) {
  LLVMValueRef args[2] = {bar, parity};
  return cg_asm(c, LLVMInt32TypeInContext(c->llc),
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [$1], $2;\n"
                "selp.u32 $0, 1, 0, p;\n}",
                "=r,r,r,~{memory}", args, 2);
}

LLVMValueRef cg_ptx_mapa_shared(cg_ctx *c, LLVMValueRef addr, LLVMValueRef rank) {
  LLVMValueRef args[2] = {addr, rank};
  return cg_asm(c, LLVMInt32TypeInContext(c->llc), "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", args, 2);
}

void cg_ptx_st_async(cg_ctx *c, LLVMValueRef addr, LLVMValueRef bits, LLVMValueRef bar) {
  LLVMValueRef args[3] = {addr, bits, bar};
  bool wide = LLVMGetIntTypeWidth(LLVMTypeOf(bits)) == 64;
  cg_asm(c, NULL,
         wide ? "st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [$0], $1, [$2];"
              : "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [$0], $1, [$2];",
         wide ? "r,l,r,~{memory}" : "r,r,r,~{memory}", args, 3);
}

void cg_ptx_mbar_expect(cg_ctx *c, LLVMValueRef bar, int bytes) {
  LLVMValueRef args[2] = {bar, cg_i32(c, bytes)};
  cg_asm(c, NULL, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}", args, 2);
}

void cg_ptx_tma_load(cg_ctx *c, int rank, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef bar,
                     const LLVMValueRef *inner_first) {
  SU_ASSERT(rank >= 1 && rank <= 5);
  su_buf text = {0}, cons = {0};
  su_buf_printf(&text, "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes"
                       " [$0], [$1, {", rank);
  su_buf_puts(&cons, "r,l,r");
  LLVMValueRef args[3 + 5] = {dst, map, bar};
  for (int i = 0; i < rank; i++) {
    su_buf_printf(&text, "%s$%d", i ? ", " : "", 3 + i);
    su_buf_puts(&cons, ",r");
    args[3 + i] = inner_first[i];
  }
  su_buf_puts(&text, "}], [$2];");
  su_buf_puts(&cons, ",~{memory}");
  cg_asm(c, NULL, su_buf_str(&text), su_buf_str(&cons), args, 3 + rank);
  su_buf_free(&text);
  su_buf_free(&cons);
}

void cg_ptx_tma_store(cg_ctx *c, int rank, LLVMValueRef src, LLVMValueRef map, const LLVMValueRef *inner_first) {
  SU_ASSERT(rank >= 1 && rank <= 5);
  su_buf text = {0}, cons = {0};
  su_buf_printf(&text, "cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [$1, {", rank);
  su_buf_puts(&cons, "r,l");
  LLVMValueRef args[2 + 5] = {src, map};
  for (int i = 0; i < rank; i++) {
    su_buf_printf(&text, "%s$%d", i ? ", " : "", 2 + i);
    su_buf_puts(&cons, ",r");
    args[2 + i] = inner_first[i];
  }
  su_buf_puts(&text, "}], [$0];");
  su_buf_puts(&cons, ",~{memory}");
  cg_asm(c, NULL, su_buf_str(&text), su_buf_str(&cons), args, 2 + rank);
  su_buf_free(&text);
  su_buf_free(&cons);
}

void cg_ptx_bulk_commit(cg_ctx *c) { cg_asm(c, NULL, "cp.async.bulk.commit_group;", "~{memory}", NULL, 0); }

void cg_ptx_bulk_wait(cg_ctx *c, int pending) {
  char text[64];
  snprintf(text, sizeof text, "cp.async.bulk.wait_group.read %d;", pending);
  cg_asm(c, NULL, text, "~{memory}", NULL, 0);
}

void cg_ptx_fence_gpu(cg_ctx *c) { cg_asm(c, NULL, "fence.acq_rel.gpu;", "~{memory}", NULL, 0); }

void cg_ptx_fence_async(cg_ctx *c) {
  cg_asm(c, NULL, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
}

void cg_ptx_bar_arrive(cg_ctx *c, LLVMValueRef id, int threads) {
  char text[48];
  snprintf(text, sizeof text, "bar.arrive $0, %d;", threads);
  cg_asm(c, NULL, text, "r,~{memory}", &id, 1);
}

void cg_ptx_setmaxnreg(cg_ctx *c, bool inc, int regs) {
  char text[64];
  snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec", regs);
  cg_asm(c, NULL, text, "", NULL, 0);
}


void cg_ptx_griddep_wait(cg_ctx *c) { cg_asm(c, NULL, "griddepcontrol.wait;", "~{memory}", NULL, 0); }

void cg_ptx_griddep_launch_dependents(cg_ctx *c) {
  cg_asm(c, NULL, "griddepcontrol.launch_dependents;", "~{memory}", NULL, 0);
}

void cg_ptx_wgmma_commit(cg_ctx *c) {
  cg_asm(c, NULL, "wgmma.commit_group.sync.aligned;", "~{memory}", NULL, 0);
}

/* "=f" or "=r" by the register's type. */
static char reg_class(LLVMValueRef x) {
  return LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMFloatTypeKind ? 'f' : 'r';
}

/* Runs `text` with the n registers in/out as operands $0..$n-1 (their tied inputs are
 * $n..$2n-1), plus the extra inputs after them ($2n...); writes the registers' new values back into regs. What LLVM sees is
 * that the statement may change them: it can move neither their uses before it nor their
 * definitions after it. */
static void asm_inout(cg_ctx *c, const char *text, LLVMValueRef *regs, int n, LLVMValueRef *extra,
                      const char *extra_cons, int nextra) {
  su_buf cons = {0};
  LLVMTypeRef *rt = SU_NEW_ARRAY(c->arena, LLVMTypeRef, n ? n : 1);
  for (int i = 0; i < n; i++) {
    su_buf_printf(&cons, "%s=%c", i ? "," : "", reg_class(regs[i]));
    rt[i] = LLVMTypeOf(regs[i]);
  }
  for (int i = 0; i < n; i++) su_buf_printf(&cons, ",%d", i);
  if (nextra) su_buf_printf(&cons, "%s%s", n ? "," : "", extra_cons);
  su_buf_puts(&cons, n || nextra ? ",~{memory}" : "~{memory}");
  int nargs = n + nextra;
  LLVMValueRef *args = SU_NEW_ARRAY(c->arena, LLVMValueRef, nargs ? nargs : 1);
  LLVMTypeRef *pt = SU_NEW_ARRAY(c->arena, LLVMTypeRef, nargs ? nargs : 1);
  for (int i = 0; i < n; i++) args[i] = regs[i];
  for (int i = 0; i < nextra; i++) args[n + i] = extra[i];
  for (int i = 0; i < nargs; i++) pt[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ret = n == 0   ? LLVMVoidTypeInContext(c->llc)
                    : n == 1 ? rt[0]
                             : LLVMStructTypeInContext(c->llc, rt, (unsigned)n, false);
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)nargs, false);
  LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons.data, cons.len, true, false,
                                     LLVMInlineAsmDialectATT, false);
  LLVMValueRef r = LLVMBuildCall2(c->b, ft, fn, args, (unsigned)nargs, "");
  su_buf_free(&cons);
  if (n == 1) regs[0] = r;
  for (int i = 0; n > 1 && i < n; i++) regs[i] = LLVMBuildExtractValue(c->b, r, (unsigned)i, "");
}

void cg_ptx_wgmma_wait(cg_ctx *c, int pending, LLVMValueRef *regs, int n) {
  char text[64];
  snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
  asm_inout(c, text, regs, n, NULL, "", 0);
}

void cg_ptx_wgmma_fence(cg_ctx *c, LLVMValueRef *regs, int n) {
  asm_inout(c, "wgmma.fence.sync.aligned;", regs, n, NULL, "", 0);
}

void cg_ptx_wgmma(cg_ctx *c, const cg_wgmma_form *form, int trans_a, int trans_b, bool add, LLVMValueRef *acc,
                  int n, LLVMValueRef desc_a, const LLVMValueRef *a_regs, LLVMValueRef desc_b) {
  su_buf text = {0};
  /* scale-d (a predicate): true, d = a.b + d; false, d = a.b */
  su_buf_printf(&text, "{\n.reg .pred p;\nsetp.ne.b32 p, %d, 0;\nwgmma.mma_async.sync.aligned.m64n%dk%d.%s {",
                add ? 1 : 0, form->n, form->k, form->types);
  for (int i = 0; i < n; i++) su_buf_printf(&text, "%s$%d", i ? ", " : "", i);
  /* operands: the n outputs, the n inputs tied to them, then a (a descriptor or four
   * registers) and b's descriptor */
  if (a_regs)
    su_buf_printf(&text, "}, {$%d, $%d, $%d, $%d}, $%d, p", 2 * n, 2 * n + 1, 2 * n + 2, 2 * n + 3, 2 * n + 4);
  else
    su_buf_printf(&text, "}, $%d, $%d, p", 2 * n, 2 * n + 1);
  if (form->imm_scale) su_buf_puts(&text, ", 1, 1");
  /* a from registers has no transposition of its own */
  if (form->imm_trans && a_regs) su_buf_printf(&text, ", %d", trans_b);
  else if (form->imm_trans) su_buf_printf(&text, ", %d, %d", trans_a, trans_b);
  su_buf_puts(&text, ";\n}");
  if (a_regs) {
    LLVMValueRef extra[5] = {a_regs[0], a_regs[1], a_regs[2], a_regs[3], desc_b};
    asm_inout(c, su_buf_str(&text), acc, n, extra, "r,r,r,r,l", 5);
  } else {
    LLVMValueRef extra[2] = {desc_a, desc_b};
    asm_inout(c, su_buf_str(&text), acc, n, extra, "l,l", 2);
  }
  su_buf_free(&text);
}
