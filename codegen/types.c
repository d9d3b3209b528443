/* IR types → LLVM types. Registers hold i1 as i1, f16/bf16 natively and fp8 as its byte (an i8); memory holds i1
 * as a byte (the ABI in codegen.h). Pointers are global (address space 1). */
#include "cg.h"

LLVMTypeRef cg_dtype_type(cg_ctx *c, tk_dtype dt) {
  switch (dt) {
  case TK_I1: return LLVMInt1TypeInContext(c->llc);
  case TK_I8: case TK_U8: return LLVMInt8TypeInContext(c->llc);
  case TK_F8E4M3: case TK_F8E5M2: return LLVMInt8TypeInContext(c->llc); /* LLVM has no fp8 */
  case TK_I16: case TK_U16: return LLVMInt16TypeInContext(c->llc);
  case TK_I32: case TK_U32: return LLVMInt32TypeInContext(c->llc);
  case TK_I64: case TK_U64: return LLVMInt64TypeInContext(c->llc);
  case TK_F16: return LLVMHalfTypeInContext(c->llc);
  case TK_BF16: return LLVMBFloatTypeInContext(c->llc);
  case TK_F32: return LLVMFloatTypeInContext(c->llc);
  case TK_F64: return LLVMDoubleTypeInContext(c->llc);
  case TK_PTR: return cg_ptr_type(c);
  case TK_NDTYPE: break;
  }
  SU_UNREACHABLE();
}

LLVMTypeRef cg_mem_type(cg_ctx *c, tk_dtype dt) {
  return dt == TK_I1 ? LLVMInt8TypeInContext(c->llc) : cg_dtype_type(c, dt);
}

LLVMTypeRef cg_type(cg_ctx *c, const ir_type *t) {
  const ir_type *e = ir_type_elem(t);
  return e->kind == IR_PTR ? cg_ptr_type(c) : cg_dtype_type(c, e->dtype);
}

LLVMTypeRef cg_ptr_type(cg_ctx *c) { return LLVMPointerTypeInContext(c->llc, CG_GLOBAL_AS); }

LLVMValueRef cg_i32(cg_ctx *c, int64_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(c->llc), (unsigned long long)v, true);
}
