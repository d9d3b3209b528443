/* Private to ir/: the tokenizer of the IR text form (docs/ir.md), used by parse.c. */
#ifndef TK_IR_IRLEX_H
#define TK_IR_IRLEX_H

#include "ir.h"

typedef enum {
  IRT_EOF,
  IRT_ERROR,  /* a malformed token; text holds the message */
  IRT_IDENT,  /* kernel, f32, add, bb, ... */
  IRT_INT,    /* 42, -7 */
  IRT_FLOAT,  /* 1.5, -2e-3, inf, -inf, nan */
  IRT_DIM,    /* "128x" in a tile shape: the number, the x swallowed */
  IRT_VALUE,  /* %12, %x: text is the name after % */
  IRT_GLOBAL, /* @softmax: text is the name after @ */
  IRT_LOC,    /* @3:13: line and col */
  IRT_STRING, /* "...": text is the decoded contents */
  IRT_HINT,   /* a name hint comment: text is the identifier inside */
  IRT_PUNCT   /* one of ( ) { } [ ] < > , : = ^ # @: text[0] */
} irtok_kind;

typedef struct {
  irtok_kind kind;
  const char *text; /* IDENT/INT/FLOAT/DIM: into the source; others: decoded (arena) */
  size_t len;
  su_loc loc;
  uint32_t line, col; /* IRT_LOC */
} irtok;

typedef struct {
  su_arena *arena;
  const su_source *src;
  size_t pos;
  uint32_t line;
  size_t line_start;
} irlex;

/* Starts tokenizing src. */
void irlex_init(irlex *lx, su_arena *a, const su_source *src);
/* Returns the next token. Comments (// to end of line, and block comments that are not a
 * name hint) and whitespace are skipped. Never reads past the end of the source. */
irtok irlex_next(irlex *lx);

#endif
