/* sema/scope.c — block scopes: a chain of symbol lists, innermost first. Lookup in a block
 * is a linear walk (blocks are small, and it keeps shadowing rules obvious); the file
 * scope, which holds every kernel and helper of a file, also has a hash index, so that a
 * file of 100 000 kernels checks in linear time. */
#include <string.h>

#include "sema_int.h"

void sema_scope_push(sema_ctx *c) {
  sema_scope *s = SU_NEW(c->a, sema_scope);
  s->parent = c->scope;
  s->depth = c->scope ? c->scope->depth + 1 : 0;
  c->scope = s;
}

void sema_scope_pop(sema_ctx *c) {
  SU_ASSERT(c->scope);
  c->scope = c->scope->parent;
}

static sema_sym *find_in(sema_scope *s, const char *name) {
  if (s->index) return su_map_get(s->index, name, strlen(name));
  for (sema_sym *y = s->syms; y; y = y->next)
    if (y->name == name || strcmp(y->name, name) == 0) return y;
  return NULL;
}

sema_sym *sema_declare(sema_ctx *c, sema_sym_kind k, const char *name, ast_node *decl) {
  sema_sym *old = find_in(c->scope, name);
  if (old) {
    su_error(c->d, decl->name_loc, "redeclaration of '%s'", name);
    if (old->decl) su_note(c->d, old->decl->name_loc, "'%s' was declared here", name);
  }
  sema_sym *y = SU_NEW(c->a, sema_sym);
  y->kind = k;
  y->name = name;
  y->decl = decl;
  y->depth = c->scope->depth;
  y->next = c->scope->syms;
  c->scope->syms = y;
  if (c->scope->index) su_map_put(c->scope->index, name, strlen(name), y);
  return y;
}

sema_sym *sema_find_function(sema_ctx *c, const char *name) {
  for (sema_scope *s = c->global; s; s = s->parent) {
    sema_sym *y = find_in(s, name);
    if (y) return y->kind == SYM_FUNC || y->kind == SYM_KERNEL ? y : NULL;
  }
  return NULL;
}

sema_sym *sema_lookup(sema_ctx *c, const char *name) {
  for (sema_scope *s = c->scope; s; s = s->parent) {
    sema_sym *y = find_in(s, name);
    if (y) return y;
  }
  return NULL;
}
