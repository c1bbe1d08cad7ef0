/*
 * The CEL parser's state and the lexer's tokens, shared by cel_lex.c (which
 * advances through the text, writes the string pool and records the first
 * error) and cel_parse.c (which builds the nodes). Private to the two.
 */
#ifndef SF_PACKER_CEL_LEX_H
#define SF_PACKER_CEL_LEX_H

#include "cel_int.h"

enum { T_EOF, T_INT, T_UINT, T_DOUBLE, T_STR, T_IDENT, T_PUNCT };

#define PP(a, b) ((a)*256 + (b))

typedef struct {
  int t;
  uint32_t pos, len; /* the token's bytes in the text */
  uint64_t u;        /* T_INT (magnitude), T_UINT */
  double d;
  uint32_t soff, slen; /* T_STR: decoded into the pool */
  int punct;           /* a char, or PP(c1, c2) */
} tok_t;

typedef struct {
  const char *name;
  uint32_t len, slot;
} scope_t;

/*
 * Static types, as far as the parser knows them: a mask of what a node can
 * be. Literals, device.driver, device.capacity's quantities and most
 * functions' results are known; attributes, variables and indexing are
 * TY_DYN, which never fails a check.
 */
enum {
  TY_NONE = 0, /* no argument beside the target */
  TY_BOOL = 1,
  TY_INT = 2,
  TY_UINT = 4,
  TY_DOUBLE = 8,
  TY_STR = 16,
  TY_LIST = 32,
  TY_QTY = 64,
  TY_SEMVER = 128,
  TY_NULL = 256,
  TY_OPT = 512,
  TY_DEVICE = 1024,  /* device */
  TY_ATTRS = 2048,   /* device.attributes */
  TY_ADOM = 4096,    /* device.attributes[domain] */
  TY_CAPS = 8192,    /* device.capacity */
  TY_CDOM = 16384,   /* device.capacity[domain] */
  TY_NET = 32768,    /* an IP or a CIDR */
  TY_FORMAT = 65536, /* a Kubernetes format (format.dns1123Label(), ...) */
  TY_MAPV = 131072,  /* a map value: a map literal, transformMap's result */
  TY_DYN = 0x3FFFF
};
#define TY_MAP (TY_DEVICE | TY_ATTRS | TY_ADOM | TY_CAPS | TY_CDOM | TY_MAPV)
#define TY_NUM (TY_INT | TY_UINT | TY_DOUBLE)

typedef struct {
  sf_cel_prog_t *p;
  const char *src;
  uint32_t len, at; /* lexer position */
  tok_t cur;
  bool failed;
  char err[160];
  uint32_t rec; /* parser recursion */
  uint16_t *depth;
  size_t depthcap;
  uint32_t *ty; /* each node's static type: TY_ bits, TY_DYN when not known */
  size_t tycap;
  size_t nodecap, kidcap, poolcap;
  scope_t scope[CEL_SLOTS_MAX];
  uint32_t nscope;
} parser_t;

/* Records the first error at byte `pos` (as "line:col: message"); later ones are dropped. */
void sf__cel_fail(parser_t *ps, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends one byte to the program's string pool. */
void sf__cel_pool_put(parser_t *ps, char c);
/* Can c start (first) or continue an identifier? */
bool sf__cel_isident(char c, bool first);
/* Reads the next token into ps->cur (T_EOF at the end or after an error). */
void sf__cel_next(parser_t *ps);
/* Is the current token the punctuation c (a char, or PP(c1, c2))? */
bool sf__cel_is_punct(const parser_t *ps, int c);
/* Consumes the punctuation c if it is the current token. */
bool sf__cel_accept(parser_t *ps, int c);
/* Consumes the punctuation c, or fails. */
void sf__cel_expect(parser_t *ps, int c);
/* Is t the identifier `word`? */
bool sf__cel_tok_is(const tok_t *t, const char *src, const char *word);

#endif
