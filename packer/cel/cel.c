/*
 * slicefit's CEL for DRA selectors: the cache of compiled programs and the
 * entry points. The lexer is cel_lex.c, the parser cel_parse.c, the
 * evaluator cel_eval.c (values in cel_value.c, the device's maps in
 * cel_device.c), the library cel_lib.c and cel_re.c.
 *
 * Grammar (CEL's, minus message literals, optional map entries, bytes and
 * root-scoped names):
 *
 *   Expr     = Or ["?" Or ":" Expr]
 *   Or       = And {"||" And}            (built balanced, as cel-go does)
 *   And      = Rel {"&&" Rel}
 *   Rel      = Add {("<"|"<="|">"|">="|"=="|"!="|"in") Add}
 *   Add      = Mul {("+"|"-") Mul}
 *   Mul      = Unary {("*"|"/"|"%") Unary}
 *   Unary    = Member | "!" Unary | "-" Unary
 *   Member   = Primary {"." ["?"] IDENT ["(" Args ")"] | "[" ["?"] Expr "]"}
 *   Primary  = IDENT ["(" Args ")"] | "(" Expr ")" | "[" [Args [","]] "]" | Literal
 *            | "{" [Expr ":" Expr {"," Expr ":" Expr} [","]] "}"
 *   Literal  = int (decimal, 0x hex) | uint (…u) | double | string | true | false | null
 *
 * Strings: '…' "…" '''…''' """…""" with every CEL escape (\\ \" \' \` \?
 * \a \b \f \n \r \t \v \xHH \uHHHH \UHHHHHHHH \ooo, code points written as
 * UTF-8), raw r'…'. Identifiers: `device`, variables of cel.bind and of the
 * macros has, all, exists, exists_one, map (2 and 3 arguments), filter and
 * the two-variable ones; functions as in cel_parse.c's table. An unknown
 * name, a reserved word, more than 10Ki of text or a tree deeper than 200
 * does not compile: the program answers UNKNOWN.
 *
 * Values: null, bool, int (int64), uint (uint64), double, string (UTF-8;
 * size() counts code points), list, quantity (exact int64 milli-units),
 * semver (its text), optional, map (cel_map.c: a literal's or
 * transformMap's entries), a Kubernetes format (cel_format.c), and the
 * device's maps: `device` (fields
 * driver, attributes, capacity, allowMultipleAllocations),
 * device.attributes and device.capacity (domain -> map; an unknown domain is
 * an empty map, as DRA specifies) and one domain's map (name -> value,
 * looked up as "domain/name" in the index). Attribute types map to int,
 * bool, string and semver; capacities are quantities.
 *
 * Errors and unknowns. A CEL runtime error (a missing key, a type mismatch
 * "no such overload", integer overflow, division by zero, an invalid
 * quantity or version text, an index out of range) propagates through every
 * strict operation. && and || absorb it as CEL specifies and commutatively:
 * false && error = error && false = false, true || error = error || true =
 * true, otherwise the error stays. What slicefit cannot decide is UNKNOWN:
 * it behaves like CEL's unknown (absorbed by the same rules, and preferred
 * over an error when both meet, since it might have been a value). The
 * selector answers YES for true, NO for false, an error or a non-bool
 * result, UNKNOWN for unknown.
 *
 * Numbers: no implicit conversion in arithmetic (int + double is "no such
 * overload"), but equality and ordering compare int, uint and double by
 * their exact mathematical value, as cel-go does with Kubernetes'
 * heterogeneous equality and CrossTypeNumericComparisons (1 == 1.0 and
 * 1 < 1.5u are true; NaN compares false). Values of different built-in
 * types are unequal, never an error; a quantity or a version compared with
 * == to another type is "no such overload", as Kubernetes' types answer.
 * Quantities and versions order through their methods, not with <.
 *
 * Cost: a lower bound of what cel-go charges with Kubernetes' estimator
 * (cel_eval.c): reads of `device` and of variables, macro iterations and
 * string traversals. Past DRA's limit of 1e6 the result is cel-go's runtime
 * error, whatever && or || would have absorbed. Evaluation allocates nothing on the heap
 * except a matches() whose pattern is not a literal.
 *
 * Cache: text -> slot through slicefit/map.h; program ids are 1, 2, ... in
 * order of first compilation and never reused within a cache (a program
 * freed and compiled again gets a new id, so caches keyed by id never see a
 * stale entry). Programs with no reference and not pinned sit on an idle
 * list, oldest first; past max_idle the oldest are freed and their slots
 * reused.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_int.h"
#include "slicefit/map.h"
#include "../util.h"

struct sf_cel_cache {
  sf_map_t by_text;
  sf_cel_prog_t **progs;
  size_t nprogs, cap; /* slots; NULL when free */
  int32_t *free_slots;
  size_t nfree, capfree;
  uint64_t next_id;
  sf_cel_prog_t *idle_head, *idle_tail; /* oldest first */
  size_t nidle, max_idle, live;
};

void sf__cel_linecol(const char *text, uint32_t pos, uint32_t *line, uint32_t *col)
{
  *line = 1;
  *col = 1;
  for (uint32_t i = 0; i < pos && text[i]; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

sf_cel_cache_t *sf_cel_cache_create(void)
{
  return sf_cel_cache_create_seeded(0);
}

sf_cel_cache_t *sf_cel_cache_create_seeded(uint64_t hash_seed)
{
  sf_cel_cache_t *c = sf_xcalloc(1, sizeof *c);
  sf_map_init(&c->by_text, hash_seed);
  c->max_idle = 1024;
  return c;
}

static void prog_free(sf_cel_prog_t *p)
{
  for (uint32_t i = 0; i < p->nres; i++)
    if (p->res[i].ok)
      regfree(&p->res[i].re);
  SF__FREE_ALL(p->res, p->nodes, p->kids, p->pool, p->err, p->text, p);
}

void sf_cel_cache_destroy(sf_cel_cache_t *c)
{
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nprogs; i++)
    if (c->progs[i])
      prog_free(c->progs[i]);
  free(c->progs);
  free(c->free_slots);
  sf_map_dispose(&c->by_text);
  free(c);
}

static void idle_unlink(sf_cel_cache_t *c, sf_cel_prog_t *p)
{
  if (p->prev)
    p->prev->next = p->next;
  else
    c->idle_head = p->next;
  if (p->next)
    p->next->prev = p->prev;
  else
    c->idle_tail = p->prev;
  p->prev = p->next = NULL;
  c->nidle--;
}

static void idle_push(sf_cel_cache_t *c, sf_cel_prog_t *p)
{
  p->prev = c->idle_tail;
  p->next = NULL;
  if (c->idle_tail)
    c->idle_tail->next = p;
  else
    c->idle_head = p;
  c->idle_tail = p;
  c->nidle++;
}

static bool is_idle(const sf_cel_prog_t *p)
{
  return p->refs == 0 && !p->pinned;
}

static void trim(sf_cel_cache_t *c)
{
  while (c->nidle > c->max_idle) {
    sf_cel_prog_t *p = c->idle_head;
    idle_unlink(c, p);
    sf_map_del(&c->by_text, p->text, strlen(p->text));
    c->progs[p->slot] = NULL;
    sf_xgrow(&c->free_slots, &c->capfree, c->nfree + 1, sizeof *c->free_slots);
    c->free_slots[c->nfree++] = p->slot;
    c->live--;
    prog_free(p);
  }
}

/* The program of `text`, compiled if needed; taken off the idle list (the caller pins or refs it). */
static sf_cel_prog_t *lookup(sf_cel_cache_t *c, const char *text)
{
  size_t len = strlen(text);
  int32_t at = sf_map_get(&c->by_text, text, len);
  if (at >= 0) {
    sf_cel_prog_t *p = c->progs[at];
    if (is_idle(p))
      idle_unlink(c, p);
    return p;
  }
  sf_cel_prog_t *p = sf_xcalloc(1, sizeof *p);
  p->text = sf_xstrdup(text);
  p->id = ++c->next_id;
  sf__cel_parse(p);
  if (c->nfree) {
    p->slot = c->free_slots[--c->nfree];
  } else {
    sf_xgrow(&c->progs, &c->cap, c->nprogs + 1, sizeof *c->progs);
    p->slot = (int32_t)c->nprogs++;
  }
  c->progs[p->slot] = p;
  c->live++;
  sf_map_put(&c->by_text, text, len, p->slot);
  return p;
}

const sf_cel_prog_t *sf_cel_compile(sf_cel_cache_t *c, const char *text)
{
  sf_cel_prog_t *p = lookup(c, text);
  p->pinned = true;
  return p;
}

const sf_cel_prog_t *sf_cel_acquire(sf_cel_cache_t *c, const char *text)
{
  sf_cel_prog_t *p = lookup(c, text);
  p->refs++;
  return p;
}

void sf_cel_release(sf_cel_cache_t *c, const sf_cel_prog_t *cp)
{
  sf_cel_prog_t *p = c->progs[cp->slot];
  assert(p == cp && p->refs > 0);
  if (--p->refs == 0 && !p->pinned) {
    idle_push(c, p);
    trim(c);
  }
}

void sf_cel_cache_set_max_idle(sf_cel_cache_t *c, size_t max_idle)
{
  c->max_idle = max_idle;
  trim(c);
}

size_t sf_cel_cache_size(const sf_cel_cache_t *c)
{
  return c->live;
}

const char *sf_cel_prog_error(const sf_cel_prog_t *p)
{
  return p->err;
}

/* Is the undeclared name of `err` ("... undeclared reference to 'x'") the namespace of a call
 * in `text` ("x.f(")? Then it is a CEL extension library slicefit lacks, not a wrong name. */
static bool namespace_call(const char *err, const char *text)
{
  const char *q = strstr(err, "undeclared reference to '");
  if (q == NULL)
    return false;
  q += strlen("undeclared reference to '");
  char name[64];
  size_t len = strcspn(q, "'");
  if (len == 0 || len >= sizeof(name))
    return false;
  memcpy(name, q, len);
  name[len] = '\0';
  for (const char *t = strstr(text, name); t != NULL; t = strstr(t + 1, name)) {
    const char *c = t + len;
    if (*c != '.')
      continue;
    c++;
    while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
           *c == '_')
      c++;
    if (*c == '(')
      return true;
  }
  return false;
}

bool sf_cel_prog_invalid(const sf_cel_prog_t *p)
{
  /* The parser's messages for what CEL accepts but slicefit does not implement all say so. */
  static const char *const subset[] = {"support", "too deeply", "too many", "too long"};
  if (p->err == NULL)
    return false;
  for (size_t i = 0; i < sizeof(subset) / sizeof(subset[0]); i++)
    if (strstr(p->err, subset[i]) != NULL)
      return false;
  return !namespace_call(p->err, p->text);
}

unsigned sf_cel_prog_min_minor(const sf_cel_prog_t *p)
{
  return p->minor;
}

int sf_cel_function_minor(const char *name)
{
  return sf__cel_function_minor(name);
}

const char *sf_cel_prog_text(const sf_cel_prog_t *p)
{
  return p->text;
}

uint64_t sf_cel_prog_id(const sf_cel_prog_t *p)
{
  return p->id;
}

static void explain(const sf_cel_prog_t *p, const cel_val_t *r, char *err, size_t errlen)
{
  uint32_t line, col;
  if (err == NULL || errlen == 0)
    return;
  if (r->t != V_ERR && r->t != V_UNK) {
    snprintf(err, errlen, "%s", r->t == V_BOOL ? "" : "the expression is not a bool");
    return;
  }
  sf__cel_linecol(p->text, p->nodes[r->n].pos, &line, &col);
  snprintf(err, errlen, "%u:%u: %s", line, col, r->v.s);
}

sf_match_t sf_cel_eval(const sf_cel_prog_t *p, const sf_index_t *idx, sf_dev_id dev, char *err,
                       size_t errlen)
{
  if (p->err != NULL) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "%s", p->err);
    return SF_MATCH_UNKNOWN;
  }
  cel_ctx_t c;
  c.p = p;
  c.idx = idx;
  c.dev = dev;
  c.steps = 0;
  c.narena = 0;
  c.nscratch = 0;
  cel_val_t r = sf__cel_ev(&c, p->root);
  /* cel-go stops the whole evaluation at the limit: no && or || absorbs it. */
  if (c.steps > CEL_COST_MAX)
    r = sf__cel_err(p->root, "operation cancelled: actual cost limit exceeded");
  explain(p, &r, err, errlen);
  if (r.t == V_UNK)
    return SF_MATCH_UNKNOWN;
  return r.t == V_BOOL && !(r.flags & CV_OPT) && r.v.b ? SF_MATCH_YES : SF_MATCH_NO;
}

sf_match_t sf_cel_match(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  return sf_cel_eval(ctx, idx, dev, NULL, 0);
}

void sf_cel_selector(const sf_cel_prog_t *p, sf_selector_t *out)
{
  out->fn = sf_cel_match;
  out->ctx = (void *)(uintptr_t)p;
  out->cache_key = p->id;
}
