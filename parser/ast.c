/* AST nodes: construction, lists, kind names. */
#include "ast.h"

#include <string.h>

ast_node *ast_new(su_arena *a, ast_kind k, su_loc loc) {
  ast_node *n = SU_NEW(a, ast_node);
  n->kind = k;
  n->loc = loc;
  n->name_loc = loc;
  n->depth = 1;
  return n;
}

const char *ast_kind_name(ast_kind k) {
  static const char *const names[] = {
      [AST_INT] = "int",         [AST_FLOAT] = "float",      [AST_BOOL] = "bool",
      [AST_STRING] = "string",   [AST_NAME] = "name",        [AST_UNARY] = "unary",
      [AST_BINARY] = "binary",   [AST_CALL] = "call",        [AST_ARG] = "arg",
      [AST_INDEX] = "index",     [AST_SLICE] = "slice",      [AST_NONE] = "none",
      [AST_CAST] = "cast",       [AST_ERROR] = "error",      [AST_TYPE] = "type",
      [AST_PTR_TYPE] = "ptr_type", [AST_TYPE_NAME] = "type_name", [AST_TUPLE] = "tuple",
      [AST_BLOCK] = "block",     [AST_LET] = "let",          [AST_ASSIGN] = "assign",
      [AST_EXPR_STMT] = "expr_stmt", [AST_FOR] = "for",      [AST_IF] = "if",
      [AST_RETURN] = "return",   [AST_WHILE] = "while",      [AST_BREAK] = "break",
      [AST_CONTINUE] = "continue",   [AST_PARAM] = "param",      [AST_ATTR] = "attr",
      [AST_KERNEL] = "kernel",   [AST_FUNC] = "fn",          [AST_CONST] = "const",
  };
  if ((unsigned)k >= sizeof names / sizeof names[0] || !names[k]) return "?";
  return names[k];
}

void ast_list_push(su_arena *a, ast_list *l, ast_node *n) {
  /* The capacity is implicit: the smallest power of two >= len (at least 4), so a list
   * needs no extra field; outgrown arrays stay in the arena. */
  if (l->len >= 4 && (l->len & (l->len - 1)) == 0) {
    ast_node **items = SU_NEW_ARRAY(a, ast_node *, 2 * l->len);
    memcpy(items, l->items, sizeof *items * (size_t)l->len);
    l->items = items;
  } else if (l->len == 0) {
    l->items = SU_NEW_ARRAY(a, ast_node *, 4);
  }
  l->items[l->len++] = n;
}

bool ast_is_stmt(ast_kind k) { return k >= AST_BLOCK && k <= AST_RETURN; }

int ast_triton_dtype(const char *name) {
  static const struct {
    const char *name;
    tk_dtype dt;
  } names[] = {{"int1", TK_I1},      {"int8", TK_I8},       {"int16", TK_I16},
               {"int32", TK_I32},    {"int64", TK_I64},     {"uint8", TK_U8},
               {"uint16", TK_U16},   {"uint32", TK_U32},    {"uint64", TK_U64},
               {"float16", TK_F16},  {"bfloat16", TK_BF16}, {"float32", TK_F32},
               {"float64", TK_F64},  {"float8e4nv", TK_F8E4M3}, {"float8e5", TK_F8E5M2}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].name, name) == 0) return names[i].dt;
  return -1;
}
