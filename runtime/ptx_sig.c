/*
 * ptx_sig.c — a tokenizer just good enough for the headers of PTX `.entry` declarations:
 *   .visible .entry NAME ( .param TYPE [.ptr [.global|…] [.align N]] PNAME, … )
 *   [.maxntid X[, Y[, Z]]] [.reqntid …] {
 * where a 16-bit float arrives as `.param .align 2 .b8 PNAME[2]`. Everything else in the module (bodies, globals, directives) is skipped token by token.
 */
#include "ptx_sig.h"

#include "../codegen/codegen.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end;
  const char *tok; /* the current token */
  size_t n;
} lexer;

static bool word_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

/* Advances to the next token (n == 0 at the end), skipping blanks and comments. */
static void next(lexer *l) {
  for (;;) {
    while (l->p < l->end && isspace((unsigned char)*l->p)) l->p++;
    if (l->end - l->p >= 2 && l->p[0] == '/' && l->p[1] == '/') {
      while (l->p < l->end && *l->p != '\n') l->p++;
    } else if (l->end - l->p >= 2 && l->p[0] == '/' && l->p[1] == '*') {
      l->p += 2;
      while (l->end - l->p >= 2 && !(l->p[0] == '*' && l->p[1] == '/')) l->p++;
      l->p = l->end - l->p >= 2 ? l->p + 2 : l->end;
    } else {
      break;
    }
  }
  l->tok = l->p;
  if (l->p < l->end) {
    if (word_char(*l->p)) {
      /* '.' starts a directive or joins a word, but ends a number-free word only at blanks */
      do l->p++;
      while (l->p < l->end && word_char(*l->p) && *l->p != '.');
    } else {
      l->p++;
    }
  }
  l->n = (size_t)(l->p - l->tok);
}

static bool is(const lexer *l, const char *s) {
  return l->n == strlen(s) && memcmp(l->tok, s, l->n) == 0;
}

/* The tk type of a PTX parameter type, or false for one tk cannot pass (.b8 arrays, …). */
static bool param_type(const lexer *l, tk_dtype *out) {
  static const struct { const char *ptx; tk_dtype dt; } map[] = {
    {".u8", TK_I8},   {".s8", TK_I8},   {".b8", TK_I8},
    {".u16", TK_I16}, {".s16", TK_I16}, {".b16", TK_I16}, {".f16", TK_F16}, {".bf16", TK_BF16},
    {".u32", TK_I32}, {".s32", TK_I32}, {".b32", TK_I32}, {".f32", TK_F32},
    {".u64", TK_I64}, {".s64", TK_I64}, {".b64", TK_I64}, {".f64", TK_F64},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (is(l, map[i].ptx)) {
      *out = map[i].dt;
      return true;
    }
  return false;
}

/* Parses one `.param …` up to (not including) the ',' or ')' after its name. */
static bool parse_param(lexer *l, su_arena *a, ir_sig_param *out) {
  if (!is(l, ".param")) return false;
  next(l);
  bool ptr = false, bytes = false;
  if (is(l, ".align")) { /* `.param .align 2 .b8 x[2]`: how LLVM passes f16 and bf16 */
    next(l);
    next(l);
    if (!is(l, ".b8")) return false;
    bytes = true;
  }
  tk_dtype dt;
  if (!param_type(l, &dt)) return false;
  next(l);
  while (l->n > 0 && l->tok[0] == '.') { /* .ptr, state space, .align N */
    if (is(l, ".ptr")) ptr = true;
    bool align = is(l, ".align");
    next(l);
    if (align) next(l);
  }
  if (l->n == 0 || !word_char(l->tok[0])) return false;
  out->name = su_strndup(a, l->tok, l->n);
  next(l);
  if (bytes) { /* the 2-byte form is a half; a larger byte array is an aggregate (NDTYPE) */
    if (!is(l, "[")) return false;
    next(l);
    bool half = is(l, "2");
    next(l);
    if (!is(l, "]")) return false;
    next(l);
    dt = half ? TK_F16 : TK_NDTYPE;
  } else if (is(l, "[")) {
    return false;
  }
  if (ptr && dt != TK_I64) return false;
  out->type = ptr ? TK_PTR : dt;
  out->pointee = TK_NDTYPE;
  out->specializable = false;
  return true;
}

/* Parses the entry after `.entry`; the lexer is left after the header. */
static bool parse_entry(lexer *l, su_arena *a, rt_ptx_entry *e) {
  memset(e, 0, sizeof *e);
  if (l->n == 0 || !word_char(l->tok[0])) return false;
  e->name = su_strndup(a, l->tok, l->n);
  next(l);
  su_vec params = {0};
  bool ok = true;
  if (is(l, "(")) {
    next(l);
    while (ok && l->n > 0 && !is(l, ")")) {
      ir_sig_param *p = SU_NEW(a, ir_sig_param);
      ok = parse_param(l, a, p);
      if (ok) su_vec_push(&params, p);
      if (is(l, ",")) next(l);
    }
    ok = ok && is(l, ")");
    next(l);
  }
  while (ok && (is(l, ".maxntid") || is(l, ".reqntid") || is(l, ".minnctapersm") ||
                is(l, ".maxnreg") || is(l, ".maxclusterrank") || is(l, ".reqnctapercluster") ||
                is(l, ".explicitcluster") || is(l, ".noreturn") || is(l, ".pragma"))) {
    bool threads = is(l, ".maxntid") || is(l, ".reqntid");
    next(l);
    if (threads && l->n > 0 && isdigit((unsigned char)l->tok[0]))
      e->num_threads = (int)strtol(su_strndup(a, l->tok, l->n), NULL, 10);
    while (l->n > 0 && !is(l, "{") && !is(l, ";") && l->tok[0] != '.') next(l);
    if (is(l, ";")) next(l);
  }
  e->nparams = params.len;
  e->params = SU_NEW_ARRAY(a, ir_sig_param, params.len);
  for (int i = 0; i < params.len; i++) e->params[i] = *(ir_sig_param *)params.data[i];
  su_vec_free(&params);
  return ok;
}

/* Whether e's aggregate parameters, if any, are tk's tensor maps: the hidden arguments
 * its `.tk.abi` line declares (tmaps first, then the persistent grid's three, then the
 * scratch and workspace pointers, after the user's parameters), which the launch fills
 * itself. */
static bool aggregates_hidden(su_arena *a, const char *ptx, size_t len, const rt_ptx_entry *e) {
  int first = -1, n = 0;
  for (int i = 0; i < e->nparams; i++)
    if (e->params[i].type == TK_NDTYPE) {
      if (first < 0) first = i;
      n++;
    }
  if (!n) return true;
  cg_abi abi;
  if (!cg_ptx_abi(su_strndup(a, ptx, len), e->name, &abi)) return false;
  int hidden = cg_abi_hidden(&abi);
  return n == abi.ntmaps && first == e->nparams - hidden;
}

int rt_ptx_entries(su_arena *a, const char *ptx, size_t len, rt_ptx_entry **out) {
  lexer l = {ptx, ptx + len, ptx, 0};
  su_vec found = {0};
  for (next(&l); l.n > 0;) {
    if (!is(&l, ".entry")) {
      next(&l);
      continue;
    }
    next(&l);
    rt_ptx_entry *e = SU_NEW(a, rt_ptx_entry);
    if (parse_entry(&l, a, e) && aggregates_hidden(a, ptx, len, e)) su_vec_push(&found, e);
  }
  *out = SU_NEW_ARRAY(a, rt_ptx_entry, found.len);
  for (int i = 0; i < found.len; i++) (*out)[i] = *(rt_ptx_entry *)found.data[i];
  int n = found.len;
  su_vec_free(&found);
  return n;
}
