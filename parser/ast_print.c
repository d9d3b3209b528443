/* The --emit=ast form: one node per line, "(kind fields @line:col[ : type]", children
 * indented below it, the closing parenthesis after the last child. Types are leaves to
 * the reader and print on one line: "(type *f32 @3:30)". */
#include "ast.h"

#include "../ir/ir.h"
#include "../lexer/lexer.h"

#include <stdlib.h>

static void print_node(FILE *out, const ast_node *n, int indent, const char *label);

static void print_type_text(FILE *out, const ast_node *t) {
  for (; t && t->kind == AST_PTR_TYPE; t = t->lhs) fputc('*', out);
  fputs(t && t->kind == AST_TYPE        ? lex_dtype_name(t->dtype)
        : t && t->kind == AST_TYPE_NAME ? t->name
                                         : "?",
        out);
}

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", out);
    else if (c == '\t')
      fputs("\\t", out);
    else if (c < 32 || c >= 127)
      fprintf(out, "\\x%02x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

/* The shortest of %.15g / %.17g that reads back as the same double. */
static void print_float(FILE *out, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  fputs(buf, out);
}

/* The fields that follow the kind on a node's line. */
static void print_fields(FILE *out, const ast_node *n) {
  switch (n->kind) {
  case AST_INT: fprintf(out, " %llu", (unsigned long long)n->ival); break;
  case AST_FLOAT: fputc(' ', out); print_float(out, n->fval); break;
  case AST_BOOL: fputs(n->ival ? " true" : " false", out); break;
  case AST_STRING: fputc(' ', out); print_string(out, n->str ? n->str : ""); break;
  case AST_UNARY: case AST_BINARY: fprintf(out, " %s", lex_kind_name(n->op)); break;
  case AST_TYPE: case AST_PTR_TYPE: case AST_TYPE_NAME: fputc(' ', out); print_type_text(out, n); break;
  case AST_ASSIGN: fprintf(out, " %s %s", n->name, lex_kind_name(n->op)); break;
  case AST_NAME: case AST_CALL: case AST_ARG: case AST_LET: case AST_FOR: case AST_PARAM:
  case AST_ATTR: case AST_KERNEL: case AST_FUNC: case AST_CONST:
    if (n->name) fprintf(out, " %s%s", n->qual ? n->qual : "", n->name);
    break;
  default: break;
  }
}

static void print_list(FILE *out, ast_list l, int indent, const char *label) {
  for (int i = 0; i < l.len; i++) print_node(out, l.items[i], indent, label);
}

static void print_child(FILE *out, const ast_node *n, int indent) {
  if (n) print_node(out, n, indent, NULL);
}

static void print_node(FILE *out, const ast_node *n, int indent, const char *label) {
  /* A positional argument is only its value; a named one shows its name. */
  if (n->kind == AST_ARG && !n->name) {
    print_node(out, n->lhs, indent, NULL);
    return;
  }
  const char *kind = label ? label
                     : n->kind == AST_LET && n->ival ? "var"
                     : n->kind == AST_PTR_TYPE || n->kind == AST_TYPE_NAME ? "type"
                                                     : ast_kind_name(n->kind);
  if (indent) fputc('\n', out);
  fprintf(out, "%*s(%s", indent, "", kind);
  print_fields(out, n);
  fprintf(out, " @%u:%u", n->loc.line, n->loc.col);
  if (n->sema_type) {
    su_buf b = {0};
    ir_type_print(&b, n->sema_type);
    fprintf(out, " : %s", su_buf_str(&b));
    su_buf_free(&b);
  }
  int in = indent + 2;
  if (n->kind != AST_TYPE && n->kind != AST_PTR_TYPE && n->kind != AST_TYPE_NAME) {
    print_list(out, n->attrs, in, NULL);
    print_list(out, n->cparams, in, "cparam");
    print_list(out, n->params, in, NULL);
    print_child(out, n->lhs, in);
    print_child(out, n->type, in);
    print_list(out, n->targs, in, NULL);
    print_list(out, n->args, in, NULL);
    print_child(out, n->rhs, in);
    print_list(out, n->stmts, in, NULL);
    print_child(out, n->body, in);
    print_child(out, n->els, in);
  }
  fputc(')', out);
}

void ast_print(FILE *out, const ast_file *f) {
  for (int i = 0; i < f->decls.len; i++) {
    print_node(out, f->decls.items[i], 0, NULL);
    fputc('\n', out);
  }
}
