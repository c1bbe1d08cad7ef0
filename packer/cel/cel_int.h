/*
 * The CEL module's private layout, shared by cel_lex.c and cel_parse.c
 * (which build a program; their own state is in cel_lex.h), cel_eval.c
 * (which runs it), cel_value.c (equality and order), cel_device.c (the
 * device's maps), cel_lib.c (strings, regular expressions, quantities and
 * semantic versions), cel_re.c, cel_url.c (URLs), cel_fmt.c (doubles in
 * format()), cel_format.c (the Kubernetes format library), cel_map.c (map
 * values) and cel.c (the cache).
 * Not a public header. See cel.c for the language, the value model and the
 * error semantics.
 */
#ifndef SF_PACKER_CEL_INT_H
#define SF_PACKER_CEL_INT_H

#include <regex.h>
#include <stdbool.h>
#include "slicefit/cel.h"

#define CEL_TEXT_MAX 10240    /* DRA's limit on an expression's length */
#define CEL_DEPTH_MAX 200     /* deepest expression tree */
#define CEL_SLOTS_MAX 32      /* variables (cel.bind, macros) in one program */
#define CEL_COST_MAX 1000000u /* DRA's cost limit (CELSelectorExpressionMaxCost) */
#define CEL_ARGS_MAX 4        /* arguments of one call, the target included */
#define CEL_ARENA 512         /* values built during one evaluation (list elements) */
#define CEL_SCRATCH 8192      /* bytes of strings built during one evaluation */

/* AST node kinds. */
enum {
  N_NULL,
  N_BOOL,
  N_INT,
  N_UINT,
  N_DOUBLE,
  N_STR,
  N_LIST,
  N_DEVICE,
  N_VAR,
  N_SELECT, /* kid0 . str ; flags F_OPT for .? */
  N_INDEX,  /* kid0 [ kid1 ] ; flags F_OPT for [? */
  N_HAS,    /* has(kid0 . str) */
  N_NOT,
  N_NEG,
  N_AND,
  N_OR,
  N_COND,
  N_ADD,
  N_SUB,
  N_MUL,
  N_DIV,
  N_MOD,
  N_EQ,
  N_NE,
  N_LT,
  N_LE,
  N_GT,
  N_GE,
  N_IN,
  N_CALL,   /* fn; kids: [target] args (F_TARGET); v.i: regex index or -1 */
  N_BIND,   /* slot v.u; kids: init, body */
  N_COMPR,  /* fn: macro kind; slot v.u (and v.u + 1 for two variables); kids: range, a [, b] */
  N_QTY,    /* quantity('literal'), parsed at compile time: v.i milli-units */
  N_SEMVER, /* semver('literal'), checked at compile time: v.s */
  N_MAP     /* map literal: kids key0, value0, key1, value1, ... */
};

#define F_OPT 1u
#define F_TARGET 2u

/* Functions and methods (N_CALL's fn) and macros (N_COMPR's fn). */
enum {
  FN_SIZE,
  FN_STARTS,
  FN_ENDS,
  FN_CONTAINS,
  FN_MATCHES,
  FN_LOWER,
  FN_UPPER,
  FN_QUANTITY,
  FN_ISQUANTITY,
  FN_COMPARE,
  FN_GT,
  FN_LT,
  FN_ADD,
  FN_SUB,
  FN_ASINT,
  FN_ASFLOAT,
  FN_ISINT,
  FN_SIGN,
  FN_SEMVER,
  FN_ISSEMVER,
  FN_MAJOR,
  FN_MINOR,
  FN_PATCH,
  FN_ORVALUE,
  FN_HASVALUE,
  FN_VALUE,
  FN_OPT_OF,
  FN_OPT_NONE,
  FN_INT,
  FN_UINT,
  FN_DOUBLE,
  FN_STRING,
  FN_DYN,
  /* The strings extension (cel-go ext.Strings, version 2). */
  FN_CHARAT,
  FN_INDEXOF,
  FN_LASTINDEXOF,
  FN_JOIN,
  FN_QUOTE,
  FN_REPLACE,
  FN_SPLIT,
  FN_SUBSTRING,
  FN_TRIM,
  FN_FORMAT,
  /* Sets (ext.Sets), Kubernetes lists and regex, cel-go lists (ext.Lists, version 3). */
  FN_SETS_CONTAINS,
  FN_SETS_EQUIVALENT,
  FN_SETS_INTERSECTS,
  FN_ISSORTED,
  FN_SUM,
  FN_MIN,
  FN_MAX,
  FN_FIND,
  FN_FINDALL,
  FN_SLICE,
  FN_FLATTEN,
  FN_DISTINCT,
  FN_REVERSE,
  FN_SORT,
  FN_FIRST,
  FN_LAST,
  FN_RANGE,
  /* The Kubernetes IP and CIDR libraries. */
  FN_IP,
  FN_ISIP,
  FN_ISCANONICAL,
  FN_FAMILY,
  FN_ISUNSPECIFIED,
  FN_ISLOOPBACK,
  FN_ISLLMULTICAST,
  FN_ISLLUNICAST,
  FN_ISGLOBALUNICAST,
  FN_CIDR,
  FN_ISCIDR,
  FN_CONTAINSIP,
  FN_CONTAINSCIDR,
  FN_MASKED,
  FN_PREFIXLEN,
  /* The Kubernetes URL library (cel_url.c). */
  FN_URL,
  FN_ISURL,
  FN_GETSCHEME,
  FN_GETHOST,
  FN_GETHOSTNAME,
  FN_GETPORT,
  FN_GETESCAPEDPATH,
  FN_GETQUERY,
  /* The Kubernetes format library (cel_format.c). */
  FN_FMT_NAMED,
  FN_FMT_CONST, /* format.dns1123Label() and the others: v.i the format */
  FN_VALIDATE,
  FN__COUNT
};
/* Macros; the two-variable forms (ext.TwoVarComprehensions) end in 2. */
enum {
  M_EXISTS,
  M_ALL,
  M_EXISTS_ONE,
  M_MAP,
  M_FILTER,
  M_SORTBY, /* the lists extension's sortBy (version 2): map's keys, then the sort */
  M_ALL2,
  M_EXISTS2,
  M_EXISTS_ONE2,
  M_TRANSFORM2,
  M_TRANSFORM_MAP2,
  M_TRANSFORM_ENTRY2
};

typedef struct {
  uint8_t op, flags;
  uint16_t fn;
  uint32_t pos;    /* byte offset in the text */
  uint32_t k0, nk; /* children: prog->kids[k0 .. k0+nk) */
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double d;
    struct {
      uint32_t off, len;
    } s; /* in prog->pool, NUL-terminated */
  } v;
} cel_node_t;

typedef struct {
  regex_t re;
  bool ok;       /* translated and compiled; else matches() is UNKNOWN */
  bool bytewise; /* '.' or a negated class: unsafe on non-ASCII text */
} cel_re_t;

struct sf_cel_prog {
  char *text;
  uint64_t id;
  uint32_t refs;                   /* sf_cel_acquire references not yet released */
  bool pinned;                     /* returned by sf_cel_compile: kept as long as the cache */
  int32_t slot;                    /* index in the cache's progs */
  struct sf_cel_prog *prev, *next; /* the idle list (refs 0, not pinned), oldest first */
  char *err;                       /* NULL when compiled */
  cel_node_t *nodes;
  uint32_t nnodes;
  uint32_t *kids;
  uint32_t nkids;
  char *pool;
  uint32_t npool;
  cel_re_t *res;
  uint32_t nres;
  uint32_t root, nslots;
  uint8_t minor; /* the oldest Kubernetes 1.x whose base CEL environment has every function used */
};

/* Values. ERR and UNK carry a static message and the node that raised it. */
enum {
  V_ERR,
  V_UNK,
  V_NULL,
  V_BOOL,
  V_INT,
  V_UINT,
  V_DOUBLE,
  V_STR,
  V_QTY,
  V_SEMVER,
  V_LIST,
  V_DEVICE,
  V_ATTRS,
  V_CAPS,
  V_ADOM,
  V_CDOM,
  V_NONE,
  V_IP,    /* v.s: 18 bytes of scratch (cel_net.c) */
  V_CIDR,  /* the same, with the prefix length */
  V_URL,   /* v.s, n: the URL's text without its fragment (cel_url.c) */
  V_QUERY, /* getQuery()'s map of lists: v.s, n the raw query (cel_url.c) */
  V_MAP,   /* a map value: v.l its n entries as 2n values, key then value, keys distinct */
  V_FORMAT /* a Kubernetes format: v.i its number (cel_format.c) */
};
#define CV_OPT 1u /* optional.of(the value) */

typedef struct cel_val {
  uint8_t t, flags;
  uint32_t n; /* STR/SEMVER/ADOM/CDOM length; LIST count; ERR/UNK node */
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double d;
    sf_milli_t q;
    const char *s; /* STR, SEMVER, ADOM/CDOM domain, ERR/UNK message */
    const struct cel_val *l;
  } v;
} cel_val_t;

typedef struct {
  const sf_cel_prog_t *p;
  const sf_index_t *idx;
  sf_dev_id dev;
  uint32_t steps;
  uint32_t narena, nscratch;
  cel_val_t slots[CEL_SLOTS_MAX];
  cel_val_t arena[CEL_ARENA];
  char scratch[CEL_SCRATCH];
} cel_ctx_t;

/** Line and column (from 1) of byte `pos` of `text`. */
void sf__cel_linecol(const char *text, uint32_t pos, uint32_t *line, uint32_t *col);
/** The minor version of the table in cel_parse.c for a function or macro name; -1 when unknown. */
int sf__cel_function_minor(const char *name);
/** Parses and checks `p->text` into p's nodes; on failure sets p->err. */
void sf__cel_parse(sf_cel_prog_t *p);
/** Evaluates node n. */
cel_val_t sf__cel_ev(cel_ctx_t *c, uint32_t n);

/* Value constructors (cel_value.c). */
cel_val_t sf__cel_err(uint32_t node, const char *msg);
cel_val_t sf__cel_unk(uint32_t node, const char *msg);
cel_val_t sf__cel_bool(bool b);
cel_val_t sf__cel_int(int64_t i);
/* An error or UNKNOWN: what strict operations pass on. */
#define BAD(x) ((x).t <= V_UNK)
/** Of two values at least one of which is bad: UNKNOWN wins over an error (it might not be one). */
cel_val_t sf__cel_worst(cel_val_t a, cel_val_t b);
/** Reserves n bytes (plus a NUL) of scratch, or NULL when it is exhausted (cel_eval.c). */
char *sf__cel_scratch(cel_ctx_t *c, size_t n);

/** Calls library function `fn` (cel_lib.c) on evaluated arguments (no ERR/UNK among them). */
cel_val_t sf__cel_call(cel_ctx_t *c, uint32_t node, const cel_val_t *a, uint32_t na);
/** Compares two values for CEL equality: BOOL, or ERR/UNK (cel_value.c). */
cel_val_t sf__cel_eq(uint32_t node, const cel_val_t *a, const cel_val_t *b);
/** Three-way order of two numbers or same-typed values: -1/0/1, 2 when unordered (NaN), 3 when incomparable. */
int sf__cel_order(const cel_val_t *a, const cel_val_t *b);

/**
 * Translates an RE2 pattern into POSIX ERE and compiles it into *r; r->ok
 * false when the pattern uses what POSIX cannot express the same way. With
 * `positions` regexec reports where the match is (find), else only whether
 * there is one (matches).
 */
void sf__cel_re_compile(cel_re_t *r, const char *pat, size_t len, bool positions);
/**
 * Calls an extension function (cel_ext.c: the strings extension, sets, lists,
 * regex find); `fn` is the node's. Arguments as for sf__cel_call.
 */
cel_val_t sf__cel_ext_call(cel_ctx_t *c, uint32_t node, int fn, const cel_val_t *a, uint32_t na);
/**
 * The end of sortBy (cel_ext.c): list l ordered by keys (the key of each element, l->n of
 * them) as cel-go's sort.Slice orders it, or an error or UNKNOWN.
 */
cel_val_t sf__cel_sort_by(cel_ctx_t *c, uint32_t node, const cel_val_t *l, const cel_val_t *keys);
/** Calls an IP or CIDR function (cel_net.c), string() of an IP or CIDR included. */
cel_val_t sf__cel_net_call(cel_ctx_t *c, uint32_t node, int fn, const cel_val_t *a, uint32_t na);
/**
 * Prints double x for format()'s clause `verb` ('s', or 'f' with precision prec) into o as
 * cel-go does (cel_fmt.c): the length, or -1 when the printing is not known for certain.
 */
long sf__cel_fmt_double(char verb, int prec, double x, char *o, size_t room);
/** The number of the Kubernetes format `name` (cel_format.c), or -1 when there is none. */
int sf__cel_format_id(const char *name, size_t n);
/** Calls a function of the Kubernetes format library (cel_format.c). */
cel_val_t sf__cel_format_call(cel_ctx_t *c, uint32_t node, int fn, const cel_val_t *a, uint32_t na);
/*
 * Map values (cel_map.c): n entries at v.l as key, value pairs, keys distinct.
 */
/** Index of the entry whose key equals `key` in map m; -1 none, -2 a key type maps cannot hold. */
int sf__cel_map_find(const cel_val_t *m, const cel_val_t *key);
/** m[key]: 1 found (*out), 0 missing, -1 a key of a type not supported (*out UNKNOWN). */
int sf__cel_map_get(const cel_val_t *m, uint32_t node, const cel_val_t *key, cel_val_t *out);
/** m.key (a field selection): as sf__cel_map_get with a string key. */
int sf__cel_map_get_field(const cel_val_t *m, uint32_t node, const char *key, size_t kn,
                          cel_val_t *out);
/** A map being built: the map so far and the entries its storage holds. */
typedef struct {
  cel_val_t m;
  cel_val_t *store; /* m's entries, writable */
  uint32_t cap;
} cel_map_builder_t;
/** Starts an empty map with room for cap entries in the arena; false when it is exhausted. */
bool sf__cel_map_start(cel_ctx_t *c, cel_map_builder_t *b, size_t cap);
/** Adds (k, v): the map so far, or an error (a key already there) or UNKNOWN (arena, key type). */
cel_val_t sf__cel_map_insert(cel_ctx_t *c, uint32_t node, cel_map_builder_t *b, const cel_val_t *k,
                             const cel_val_t *v);
/** a == b where either is a map value: BOOL, or ERR/UNK. */
cel_val_t sf__cel_map_eq(uint32_t node, const cel_val_t *a, const cel_val_t *b);
/** Calls a URL function (cel_url.c). */
cel_val_t sf__cel_url_call(cel_ctx_t *c, uint32_t node, int fn, const cel_val_t *a, uint32_t na);
/**
 * Looks `key` up in a getQuery() map: 1 found (*out, the list of its values), 0 missing;
 * with out NULL only whether it is there.
 */
int sf__cel_query_lookup(cel_ctx_t *c, uint32_t node, const cel_val_t *q, const char *key, size_t kn,
                         cel_val_t *out);
/** How many distinct keys a getQuery() map has. */
int64_t sf__cel_query_size(const cel_val_t *q);
/** Is s[0..n) an IPv6 address as netip.ParseAddr reads one (no zone)? (cel_net.c) */
bool sf__cel_ipv6(const char *s, size_t n);
/** Equality of two IPs or two CIDRs (the same kind). */
bool sf__cel_net_eq(const cel_val_t *a, const cel_val_t *b);
/** The node's compiled regular expression, or `dyn` compiled from pat (the caller frees dyn). */
cel_re_t *sf__cel_regex(cel_ctx_t *c, uint32_t node, const cel_val_t *pat, cel_re_t *dyn);
/** Reserves n list elements in the arena, or NULL when it is exhausted (cel_eval.c). */
cel_val_t *sf__cel_reserve(cel_ctx_t *c, size_t n);
/** The code point at s[0..n) (n > 0) and its length in *len; -1 (length 1) for an invalid byte, as Go. */
int32_t sf__cel_rune_at(const unsigned char *s, size_t n, size_t *len);
/** A string value over s (borrowed for the evaluation). */
cel_val_t sf__cel_str(const char *s, size_t n);

/** Parses a semantic version (strict SemVer 2.0.0); 0, or -1 when invalid. `part` may be NULL. */
int sf__cel_semver(const char *s, size_t n, int64_t part[3]);
/** Orders two valid semantic versions by SemVer precedence: -1, 0, 1. */
int sf__cel_semver_cmp(const char *a, size_t an, const char *b, size_t bn);

/*
 * The device's maps (cel_device.c). A domain map (ADOM/CDOM) holds the
 * device's attributes (attrs) or capacities whose qualified name is in its
 * domain; fields are read by position, 0 .. sf__cel_nfields.
 */
/** Is the qualified `name` in domain dom (dn bytes)? */
bool sf__cel_in_domain(const char *name, const char *dom, uint32_t dn);
/** The qualified name of the device's attribute (attrs) or capacity i; NULL past the last. */
const char *sf__cel_field_name(const cel_ctx_t *c, bool attrs, size_t i);
/** How many attributes (attrs) or capacities the device has. */
size_t sf__cel_nfields(const cel_ctx_t *c, bool attrs);
/** Whether any attribute (capacity) lives in the domain `key`. */
bool sf__cel_has_domain(const cel_ctx_t *c, bool attrs, const char *key, size_t kn);
/** How many of the device's attributes (capacities) are in the domain map dom. */
int64_t sf__cel_ndomain_fields(const cel_ctx_t *c, bool attrs, const cel_val_t *dom);
/**
 * Looks `key` up in a map-like value (the device, its maps, a domain map): 1 found (*out),
 * 0 missing, -1 when the value has no fields (*out an error).
 */
int sf__cel_lookup(cel_ctx_t *c, uint32_t n, const cel_val_t *m, const char *key, size_t kn,
                   cel_val_t *out);
/** Size of a device map value (ATTRS/CAPS: domains; ADOM/CDOM: fields); false for other values. */
bool sf__cel_map_size(const cel_ctx_t *c, const cel_val_t *m, int64_t *out);
/** The value of the device's attribute (attrs) or capacity i. */
void sf__cel_field_value(cel_ctx_t *c, uint32_t node, bool attrs, size_t i, cel_val_t *out);
/** The attribute or capacity `key` of domain `dom` on the context's device; 1 found, 0 not. */
int sf__cel_dev_field(cel_ctx_t *c, uint32_t node, bool attrs, const cel_val_t *dom, const char *key,
                      size_t kn, cel_val_t *out);

#endif
