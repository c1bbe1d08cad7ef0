/*
 * The kube-scheduler extender protocol (k8s.io/kube-scheduler/extender/v1):
 * ExtenderArgs in, ExtenderFilterResult and HostPriorityList out.
 *
 * Input is untrusted: the body is checked for nesting depth before jansson
 * sees it, then every field is type-checked with its JSON path in the error.
 * Keys match case-insensitively as Go's encoding/json does. Replies are
 * written straight into a text buffer (no intermediate JSON tree): at 5,000
 * nodes that halves the cost of a call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ext_int.h"

bool sf__json_depth_ok(const char *text, size_t len, unsigned max)
{
  unsigned depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_str) {
      if (ch == '\\')
        i++;
      else if (ch == '"')
        in_str = false;
    } else if (ch == '"') {
      in_str = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max)
        return false;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
    }
  }
  return true;
}

json_t *sf__json_get_ci(const json_t *obj, const char *key)
{
  json_t *v = json_object_get(obj, key);
  if (v)
    return v;
  const char *k;
  json_t *val;
  json_object_foreach((json_t *)(uintptr_t)obj, k, val)
  {
    if (strcasecmp(k, key) == 0)
      return val;
  }
  return NULL;
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return rc;
}

/* NodeNames: an array of strings. */
static int take_names(sf__args_t *a, const json_t *arr, const sf__limits_t *lim, char *err,
                      size_t errlen)
{
  if (!json_is_array(arr))
    return fail(err, errlen, SF_EINVAL, "NodeNames: expected an array of strings or null");
  size_t n = json_array_size(arr);
  if (n > lim->max_nodes)
    return fail(err, errlen, SF_E2BIG, "NodeNames: %zu nodes is more than the limit of %zu", n,
                lim->max_nodes);
  a->names = sf_xcalloc(n, sizeof *a->names);
  for (size_t i = 0; i < n; i++) {
    a->names[i] = json_string_value(json_array_get(arr, i));
    if (a->names[i] == NULL)
      return fail(err, errlen, SF_EINVAL, "NodeNames[%zu]: expected a string", i);
  }
  a->n = n;
  a->cache_mode = true;
  return 0;
}

/* Nodes: a NodeList whose items carry metadata.name. */
static int take_items(sf__args_t *a, const json_t *list, const sf__limits_t *lim, char *err,
                      size_t errlen)
{
  const json_t *items = json_is_object(list) ? sf__json_get_ci(list, "items") : NULL;
  if (!json_is_object(list) || (items && !json_is_array(items) && !json_is_null(items)))
    return fail(err, errlen, SF_EINVAL, "Nodes: expected a NodeList object with items");
  size_t n = json_array_size(items);
  if (n > lim->max_nodes)
    return fail(err, errlen, SF_E2BIG, "Nodes.items: %zu nodes is more than the limit of %zu", n,
                lim->max_nodes);
  a->names = sf_xcalloc(n, sizeof *a->names);
  a->items = sf_xcalloc(n, sizeof *a->items);
  for (size_t i = 0; i < n; i++) {
    json_t *node = json_array_get(items, i);
    const json_t *md = json_is_object(node) ? json_object_get(node, "metadata") : NULL;
    a->names[i] = json_string_value(json_object_get(md, "name"));
    if (a->names[i] == NULL)
      return fail(err, errlen, SF_EINVAL, "Nodes.items[%zu].metadata.name: expected a string", i);
    a->items[i] = node;
  }
  a->n = n;
  return 0;
}

static int take_root(sf__args_t *a, const sf__limits_t *lim, char *err, size_t errlen)
{
  if (!json_is_object(a->root))
    return fail(err, errlen, SF_EINVAL, "(root): expected an ExtenderArgs object");
  a->pod = sf__json_get_ci(a->root, "Pod");
  if (!json_is_object(a->pod))
    return fail(err, errlen, SF_EINVAL, "Pod: expected a Pod object");
  const json_t *names = sf__json_get_ci(a->root, "NodeNames");
  const json_t *nodes = sf__json_get_ci(a->root, "Nodes");
  /* The scheduler sets exactly one; NodeNames decides the mode as upstream does. */
  if (names && !json_is_null(names))
    return take_names(a, names, lim, err, errlen);
  if (nodes && !json_is_null(nodes))
    return take_items(a, nodes, lim, err, errlen);
  a->cache_mode = true;
  return 0;
}

/* The general path: jansson over the whole body. */
int sf__args_parse_general(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim,
                           char *err, size_t errlen)
{
  *a = (sf__args_t){0};
  if (!sf__json_depth_ok(body, len, lim->max_depth))
    return fail(err, errlen, SF_EINVAL, "JSON nested deeper than %u levels", lim->max_depth);
  json_error_t je;
  a->root = json_loadb(body, len, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &je);
  if (a->root == NULL) {
    snprintf(err, errlen, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
    return SF_EINVAL;
  }
  int rc = take_root(a, lim, err, errlen);
  if (rc)
    sf__args_dispose(a);
  return rc;
}

/*
 * The fast path for the common shape, ExtenderArgs with NodeNames: the root
 * object is scanned by hand, only the Pod (small) goes through jansson, and
 * the node names are copied into one arena. jansson spends ~0.5 us per array
 * element, which at 5,000 names was most of a call. Anything this scanner
 * does not expect (escapes it does not decode, non-ASCII bytes, a non-string
 * name, any syntax error) makes it give up, and the general path decides:
 * so the fast path only ever accepts what the general one would.
 */
typedef struct {
  const char *p, *end;
} cur_t;

static void ws(cur_t *c)
{
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static bool eat(cur_t *c, char ch)
{
  ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* At '"': moves past the closing quote; false on a raw control byte or the end. */
static bool skip_string(cur_t *c)
{
  const unsigned char *p = (const unsigned char *)c->p + 1, *end = (const unsigned char *)c->end;
  for (;;) {
    while (p < end && sf__json_plain[*p])
      p++;
    if (p >= end || *p < 0x20)
      return false;
    if (*p == '"') {
      c->p = (const char *)p + 1;
      return true;
    }
    p += 2; /* a backslash and the byte it escapes */
  }
}

/* Skips one value's bytes (structure is checked later by jansson); false when unbalanced. */
static bool skip_value(cur_t *c)
{
  unsigned depth = 0;
  ws(c);
  while (c->p < c->end) {
    char ch = *c->p;
    if (ch == '"') {
      if (!skip_string(c))
        return false;
    } else if (ch == '{' || ch == '[') {
      depth++;
      c->p++;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0)
        return true; /* the end of the enclosing object: a scalar ended before it */
      depth--;
      c->p++;
    } else if (ch == ',' && depth == 0) {
      return true;
    } else {
      c->p++;
    }
    if (depth == 0 && (ch == '"' || ch == '}' || ch == ']'))
      return true;
  }
  return false;
}

/* Copies a plain string (ASCII, simple escapes) at '"' into *o; false to give up. */
static bool copy_string(cur_t *c, char **o)
{
  static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
  const unsigned char *p = (const unsigned char *)c->p + 1, *end = (const unsigned char *)c->end;
  char *w = *o;
  for (;;) {
    while (p < end && *p < 0x80 && sf__json_plain[*p])
      *w++ = (char)*p++;
    if (p >= end || *p < 0x20 || *p >= 0x80)
      return false;
    if (*p == '"') {
      c->p = (const char *)p + 1;
      *w++ = '\0';
      *o = w;
      return true;
    }
    const char *e = ++p < end ? strchr(esc_in, *p) : NULL; /* after a backslash */
    if (e == NULL || *e == '\0')
      return false;
    *w++ = esc_out[e - esc_in];
    p++;
  }
}

/* At '[': takes a flat array of plain strings into a->names and moves past it. */
static int fast_names(sf__args_t *a, cur_t *c, const sf__limits_t *lim)
{
  size_t cap = 0;
  char *w = a->arena = sf_xmalloc((size_t)(c->end - c->p) + 1);
  if (!eat(c, '['))
    return SF_EINVAL;
  if (eat(c, ']'))
    return 0;
  do {
    ws(c);
    if (c->p >= c->end || *c->p != '"' || a->n >= lim->max_nodes)
      return SF_EINVAL;
    sf_xgrow(&a->names, &cap, a->n + 1, sizeof *a->names);
    a->names[a->n++] = w;
    if (!copy_string(c, &w))
      return SF_EINVAL;
  } while (eat(c, ','));
  return eat(c, ']') ? 0 : SF_EINVAL;
}

/* At '[': the kept list when the array's bytes are its bytes, else fast_names. */
static int names_or_list(sf__args_t *a, cur_t *c, const sf__limits_t *lim, const sf__names_t *list)
{
  if (list && list->len && list->n <= lim->max_nodes && (size_t)(c->end - c->p) >= list->len &&
      memcmp(c->p, list->text, list->len) == 0) {
    a->list = list;
    a->names = list->names;
    a->n = list->n;
    c->p += list->len;
    return 0;
  }
  return fast_names(a, c, lim);
}

static void drop_names(sf__args_t *a)
{
  if (a->list) { /* the kept list's, not ours */
    a->list = NULL;
    a->names = NULL;
    a->n = 0;
    return;
  }
  free(a->names);
  free(a->arena);
  a->names = NULL;
  a->arena = NULL;
  a->n = 0;
}

typedef struct {
  cur_t pod, names, nodes;
  cur_t key[3]; /* the key each one was taken under */
} spans_t;

/*
 * Checks a skipped member value with jansson; returns it (new) or NULL. It
 * sits one level below the root, hence max_depth - 1 (the caller made sure
 * max_depth >= 2).
 */
static json_t *load_span(cur_t v, const sf__limits_t *lim)
{
  size_t len = (size_t)(v.end - v.p);
  if (!sf__json_depth_ok(v.p, len, lim->max_depth - 1))
    return NULL;
  return json_loadb(v.p, len, JSON_DECODE_ANY, NULL);
}

static bool valid_span(cur_t v, const sf__limits_t *lim)
{
  json_t *j = load_span(v, lim);
  json_decref(j);
  return j != NULL;
}

static bool is_null(cur_t v)
{
  ws(&v);
  while (v.end > v.p &&
         (v.end[-1] == ' ' || v.end[-1] == '\t' || v.end[-1] == '\n' || v.end[-1] == '\r'))
    v.end--;
  return v.end - v.p == 4 && memcmp(v.p, "null", 4) == 0;
}

/*
 * One member of the root; keys with escapes give up. As in the general path
 * (jansson keeps the last value of a repeated key, in the place where the key
 * first came; sf__json_get_ci takes an exact match, else the first other
 * casing), the last exact key wins, else the first key in another casing
 * with the last value given under that same spelling. The NodeNames value
 * that is kept is taken into `a` as it is read (most of a body is names);
 * any other value is skipped and checked with jansson.
 */
static bool fast_member(cur_t *c, spans_t *sp, unsigned seen[3], sf__args_t *a,
                        const sf__limits_t *lim, const sf__names_t *list)
{
  static const char *const fields[3] = {"Pod", "NodeNames", "Nodes"};
  ws(c);
  const char *k = c->p + 1;
  if (c->p >= c->end || *c->p != '"' || !skip_string(c))
    return false;
  size_t klen = (size_t)(c->p - 1 - k);
  for (size_t i = 0; i < klen; i++)
    if (k[i] == '\\' || (unsigned char)k[i] >= 0x80) /* escapes, or UTF-8 to be checked */
      return false;
  if (!eat(c, ':'))
    return false;
  ws(c);
  int f = 0;
  while (f < 3 && (strlen(fields[f]) != klen || strncasecmp(k, fields[f], klen) != 0))
    f++;
  unsigned rank = f < 3 && memcmp(k, fields[f], klen) == 0 ? 2 : 1; /* exact : other casing */
  bool keep = f < 3 &&
              (rank == 2 || seen[f] == 0 || (seen[f] == 1 && memcmp(sp->key[f].p, k, klen) == 0));
  cur_t v = {c->p, NULL};
  if (!keep) { /* an unknown key, or one the general path would not take */
    if (!skip_value(c))
      return false;
    v.end = c->p;
    return valid_span(v, lim);
  }
  cur_t *slot[3] = {&sp->pod, &sp->names, &sp->nodes};
  cur_t dropped = *slot[f];
  if (f == 1)
    drop_names(a);
  if (f == 1 && c->p < c->end && *c->p == '[' ? names_or_list(a, c, lim, list) != 0 : !skip_value(c))
    return false;
  v.end = c->p;
  *slot[f] = v;
  sp->key[f] = (cur_t){k, k + klen};
  seen[f] = rank > seen[f] ? rank : seen[f];
  /* A dropped NodeNames array was taken whole, so it was valid JSON. */
  return dropped.p == NULL || (f == 1 && *dropped.p == '[') || valid_span(dropped, lim);
}

static int fast_root(sf__args_t *a, cur_t c, const sf__limits_t *lim, sf__names_t *list)
{
  spans_t sp;
  memset(&sp, 0, sizeof sp);
  unsigned seen[3] = {0};
  if (!eat(&c, '{'))
    return SF_EINVAL;
  if (!eat(&c, '}')) {
    do {
      if (!fast_member(&c, &sp, seen, a, lim, list))
        return SF_EINVAL;
    } while (eat(&c, ','));
    if (!eat(&c, '}'))
      return SF_EINVAL;
  }
  /*
   * The general path checks the depth of the whole body, trailing bytes
   * included; here the root's members were checked one by one, and what
   * follows the root is checked on its own (the root ends at depth 0).
   */
  if (!sf__json_depth_ok(c.p, (size_t)(c.end - c.p), lim->max_depth))
    return SF_EINVAL;
  /* Only the NodeNames shape is taken here; a NodeList goes the general way. */
  if (sp.pod.p == NULL || sp.names.p == NULL || *sp.names.p != '[' ||
      (sp.nodes.p && !is_null(sp.nodes)))
    return SF_EINVAL;
  a->root = json_object();
  json_t *pod = load_span(sp.pod, lim);
  json_object_set_new(a->root, "Pod", pod ? pod : json_null());
  a->pod = pod;
  if (!json_is_object(pod))
    return SF_EINVAL;
  a->cache_mode = true;
  if (list && a->list == NULL) { /* a new array: kept for the calls that follow */
    sf__names_keep(list, sp.names.p, (size_t)(sp.names.end - sp.names.p), &a->arena, &a->names, a->n);
    if (list->id) {
      a->list = list;
      a->names = list->names;
    }
  }
  return 0;
}

static int parse_fast(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim,
                      sf__names_t *list)
{
  *a = (sf__args_t){0};
  if (lim->max_depth < 2) /* the root and the NodeNames array */
    return SF_EINVAL;
  int rc = fast_root(a, (cur_t){body, body + len}, lim, list);
  if (rc)
    sf__args_dispose(a);
  return rc;
}

int sf__args_parse(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim, char *err,
                   size_t errlen)
{
  return sf__args_parse_list(a, body, len, lim, NULL, err, errlen);
}

int sf__args_parse_list(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim,
                        sf__names_t *list, char *err, size_t errlen)
{
  if (parse_fast(a, body, len, lim, list) == 0)
    return 0;
  /* A jansson tree takes about twenty times its text: large NodeLists are refused. */
  if (lim->max_general_bytes && len > lim->max_general_bytes) {
    snprintf(err, errlen,
             "a body of %zu bytes that is not a NodeNames call (a NodeList) is larger than the "
             "limit of %zu bytes; configure the extender with nodeCacheCapable: true",
             len, lim->max_general_bytes);
    return SF_E2BIG;
  }
  return sf__args_parse_general(a, body, len, lim, err, errlen);
}

void sf__args_dispose(sf__args_t *a)
{
  json_decref(a->root);
  if (a->list == NULL)
    free(a->names);
  free(a->items);
  free(a->arena);
  free(a->items_text);
  free(a->items_off);
  *a = (sf__args_t){0};
}

void sf__args_detach(sf__args_t *a)
{
  sf__buf_t t = {0};
  if (a->items) {
    a->items_off = sf_xcalloc(a->n + 1, sizeof *a->items_off);
    for (size_t i = 0; i < a->n; i++) {
      a->items_off[i] = t.len;
      char *s = json_dumps(a->items[i], JSON_COMPACT | JSON_ENCODE_ANY);
      sf__buf_puts(&t, s ? s : "null");
      free(s);
    }
    a->items_off[a->n] = t.len;
    a->items_text = sf__buf_steal(&t, NULL);
    free(a->items);
    a->items = NULL;
  }
  if (a->arena == NULL && a->n) { /* the names point into the tree: copy them */
    size_t total = 0;
    for (size_t i = 0; i < a->n; i++)
      total += strlen(a->names[i]) + 1;
    char *arena = sf_xmalloc(total), *o = arena;
    for (size_t i = 0; i < a->n; i++) {
      size_t l = strlen(a->names[i]) + 1;
      memcpy(o, a->names[i], l);
      a->names[i] = o;
      o += l;
    }
    a->arena = arena;
  }
  json_t *root = json_object();
  json_object_set(root, "Pod", (json_t *)(uintptr_t)a->pod);
  json_decref(a->root);
  a->root = root;
}

/* Name i as a JSON string: copied as it came when the list was kept, else escaped. */
static void put_name(sf__buf_t *b, const sf__args_t *a, size_t i)
{
  if (a->list)
    sf__buf_put(b, a->list->text + a->list->raw[2 * i], a->list->raw[2 * i + 1]);
  else
    sf__buf_json_str(b, a->names[i]);
}

/* ",name" (no comma first) of a kept list in one copy. */
static void put_kept_item(sf__buf_t *b, const sf__names_t *l, size_t i, bool first)
{
  size_t len = l->raw[2 * i + 1];
  sf__buf_reserve(b, len + 1);
  char *o = b->p + b->len;
  if (!first)
    *o++ = ',';
  memcpy(o, l->text + l->raw[2 * i], len);
  o += len;
  *o = '\0';
  b->len = (size_t)(o - b->p);
}

static bool passes(const sf_verdict_t *v, size_t i)
{
  return !v || v[i].fit != SF_FIT_NO;
}

static void put_passing(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v)
{
  bool first = true;
  for (size_t i = 0; i < a->n; i++) {
    if (!passes(v, i))
      continue;
    if (a->list) {
      put_kept_item(b, a->list, i, first);
      first = false;
      continue;
    }
    if (!first)
      sf__buf_put(b, ",", 1);
    first = false;
    if (a->cache_mode) {
      put_name(b, a, i);
    } else if (a->items_text) {
      sf__buf_put(b, a->items_text + a->items_off[i], a->items_off[i + 1] - a->items_off[i]);
    } else {
      char *s = json_dumps(a->items[i], JSON_COMPACT | JSON_ENCODE_ANY);
      sf__buf_puts(b, s ? s : "null");
      free(s);
    }
  }
}

/*
 * The escaped reasons already written, by offset in the reply: at 5,000
 * nodes most failures share a handful of sentences, and copying one that is
 * already escaped costs a comparison and a memcpy instead of an escape.
 */
#define SEEN_REASONS 8

typedef struct {
  const char *text; /* the verdict's reason it was escaped from */
  size_t off, len;  /* where its escaped form sits in the buffer */
} seen_t;

/* Neighbouring nodes mostly fail alike: the reason matched last is tried first (*last). */
static void put_reason(sf__buf_t *b, const char *reason, seen_t *seen, size_t *nseen, size_t *last)
{
  for (size_t j = 0; j < *nseen; j++) {
    size_t k = (*last + j) % *nseen;
    if (strcmp(seen[k].text, reason) == 0) {
      *last = k;
      size_t off = seen[k].off, len = seen[k].len;
      sf__buf_reserve(b, len); /* may move the text: hence offsets, not pointers */
      memcpy(b->p + b->len, b->p + off, len);
      b->len += len;
      b->p[b->len] = '\0';
      return;
    }
  }
  size_t off = b->len;
  sf__buf_json_str(b, reason);
  seen_t *slot = &seen[*nseen < SEEN_REASONS ? (*nseen)++ : off % SEEN_REASONS];
  *slot = (seen_t){reason, off, b->len - off};
}

static void put_failed(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v)
{
  static const char unknown[] = "does not fit the pod's device claims";
  seen_t seen[SEEN_REASONS];
  size_t nseen = 0, last = 0;
  bool first = true;
  for (size_t i = 0; v && i < a->n; i++) {
    if (passes(v, i))
      continue;
    if (a->list) {
      put_kept_item(b, a->list, i, first);
    } else {
      if (!first)
        sf__buf_put(b, ",", 1);
      put_name(b, a, i);
    }
    first = false;
    sf__buf_put(b, ":", 1);
    put_reason(b, v[i].reason[0] ? v[i].reason : unknown, seen, &nseen, &last);
  }
}

void sf__filter_reply(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v)
{
  if (a->cache_mode) {
    sf__buf_puts(b, "{\"Nodes\":null,\"NodeNames\":[");
    put_passing(b, a, v);
    sf__buf_puts(b, "],\"FailedNodes\":{");
  } else {
    sf__buf_puts(b, "{\"Nodes\":{\"metadata\":{},\"items\":[");
    put_passing(b, a, v);
    sf__buf_puts(b, "]},\"NodeNames\":null,\"FailedNodes\":{");
  }
  put_failed(b, a, v);
  /*
   * Preemption may free devices on any node, so no failure is final:
   * FailedAndUnresolvableNodes stays empty.
   */
  sf__buf_puts(b, "},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
}

/* `,"Score":N}` at o, room reserved; the buffer ends there. */
static void put_score(sf__buf_t *b, char *o, int score)
{
  memcpy(o, ",\"Score\":", 9);
  o += 9;
  if (score >= 10)
    *o++ = (char)('0' + score / 10);
  *o++ = (char)('0' + score % 10);
  *o++ = '}';
  *o = '\0';
  b->len = (size_t)(o - b->p);
}

/* The entry of name i of a kept list, written at once: its quoted form is copied as it came. */
static void put_host_kept(sf__buf_t *b, const sf__names_t *l, size_t i, int score)
{
  size_t len = l->raw[2 * i + 1];
  sf__buf_reserve(b, len + 24);
  char *o = b->p + b->len;
  memcpy(o, "{\"Host\":", 8);
  memcpy(o + 8, l->text + l->raw[2 * i], len);
  o += 8 + len;
  put_score(b, o, score);
}

void sf__prioritize_reply(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v)
{
  sf__buf_put(b, "[", 1);
  for (size_t i = 0; i < a->n; i++) {
    int score = v && v[i].fit == SF_FIT_YES ? v[i].score : 0;
    score = score < 0 ? 0 : score > SF_SCORE_MAX ? SF_SCORE_MAX : score;
    if (i)
      sf__buf_put(b, ",", 1);
    if (a->list) {
      put_host_kept(b, a->list, i, score);
      continue;
    }
    sf__buf_put(b, "{\"Host\":", 8);
    put_name(b, a, i);
    sf__buf_reserve(b, 13);
    put_score(b, b->p + b->len, score);
  }
  sf__buf_put(b, "]", 1);
}
