/*
 * slicefit policy: every knob of the packer, in one struct, built from the
 * key/value strings a ConfigMap's data holds.
 *
 * Keys, their defaults and meaning (sf_policy_keys lists them too):
 *   strategy          fragmentation | fgd | binpack | spread   (fragmentation)
 *   device_choice     first-fit | packer                       (first-fit)
 *       first-fit scores the device the in-tree DRA allocator will take (first
 *       fit in node order), as happens in a live cluster; packer lets the core
 *       pick the device (the replay measures both): under fgd the device FGD
 *       scores best, under the others the tightest fit, devices of an intact
 *       island last.
 *   capacity          the shared capacity that measures a device's share  (memory)
 *   model_attribute   device attribute naming the GPU model    (productName)
 *   island_attribute  device attribute whose equal values form an NVLink island ("")
 *   island_map        islands by model when no attribute says: "[NODEPREFIX:]MODEL=SIZE,..."
 *                     MODEL matches the model attribute case-insensitively as a
 *                     substring; the node's devices of that model form islands of
 *                     SIZE in device order ("")
 *   fgd_mix           the target workload for strategy fgd: "[CPU:]AMOUNTxCOUNT[@M1|M2][!]=WEIGHT,..."
 *                     AMOUNT a quantity of `capacity` or "whole"; "!" = needs one island ("")
 *   weight_frag       weight of the fragmentation term; fgd and fragmentation compare
 *                     nodes in FGD's integer steps, so it also sets their size (1)
 *   weight_island     penalty for breaking an intact NVLink island, in GPUs of fragmentation (1)
 *   weight_model      penalty for using a scarce model a flexible claim does not need (0.5)
 *   weight_unfed      fragmentation: how much of an idle GPU that the node's free CPU
 *                     cannot feed counts as fragmentation for a typical pod that takes
 *                     whole GPUs (or more than half of one), in 0..1; 0 is FGD's measure
 *                     as published, which fgd keeps whatever this says (0.25)
 *   weight_plan       fragmentation: weight of the plan's loss, the per-mille of a GPU a
 *                     share placement takes beyond its worth when the mix's shares pack
 *                     as tightly as they can (the configuration LP's prices); 0 leaves
 *                     it out (16)
 *   weight_strand     fragmentation: weight of the worth (at the plan's prices) of the
 *                     part-used GPUs a placement leaves without the CPU to feed a share
 *                     of the mix; 0 leaves it out (16)
 *   weight_fill       fragmentation, only while the fleet churns (sf_mix_churning): weight
 *                     of the free GPU, and a 64th of a GPU per free core, a placement
 *                     leaves on its node (best fit); 0 leaves it out (0.1)
 *   mix_coverage      percent of the present pods the learned mix keeps: its most frequent
 *                     shapes, in order, until they cover this share (FGD's typical
 *                     pods: 95); 100 keeps every shape (95)
 *   max_sharers       most allocations on one shared device, 0 = unlimited (0)
 *   headroom_pct      percent of each shared device's capacity kept free (0)
 *   search_budget     most search steps per node before a node is passed as unsure (4096)
 *   cpu_only_pods     score | pass                             (score)
 *       pods without claims (CPU-only pods): score places them by the
 *       strategy, as the FGD simulator and the replay's default do (FGD's rule
 *       keeps each typical pod's CPU free on GPU nodes; a node without GPUs
 *       gets the top score); pass returns every node unscored and leaves them
 *       to kube-scheduler's own scorers. Either way the filter never rejects a
 *       node for such a pod.
 *   defrag_max_evictions       most pods one defragmentation plan evicts, 1..16 (4)
 *   defrag_protect_namespaces  comma-separated namespaces whose pods a plan never
 *                              evicts (kube-system)
 *   defrag_max_per_hour        most plans carried out per hour (the churn
 *                              replay's --defrag), 0..3600 (6)
 *   defrag_budget              most node evaluations one plan spends, the planner's
 *                              time limit counted in work (50000)
 */
#ifndef SLICEFIT_POLICY_H
#define SLICEFIT_POLICY_H

#include <stdbool.h>
#include "slicefit/common.h"

typedef enum {
  SF_STRATEGY_FRAGMENTATION = 0,
  SF_STRATEGY_FGD,
  SF_STRATEGY_BINPACK,
  SF_STRATEGY_SPREAD
} sf_strategy_t;

typedef enum { SF_CHOICE_FIRST_FIT = 0, SF_CHOICE_PACKER } sf_choice_t;

typedef enum { SF_CPU_ONLY_SCORE = 0, SF_CPU_ONLY_PASS } sf_cpu_only_t;

#define SF_POLICY_NAME_MAX 128
#define SF_POLICY_MODELS_MAX 8
#define SF_DEFRAG_EVICT_MAX 16 /* largest defrag_max_evictions */

/* A typical pod of the target workload (FGD's "typical pods"). */
typedef struct {
  int64_t cpu_milli;
  sf_milli_t amount; /* of the primary capacity per device; 0 = whole devices */
  uint32_t count;    /* devices */
  bool island;       /* all in one NVLink island */
  char models[SF_POLICY_MODELS_MAX][SF_POLICY_NAME_MAX]; /* allowed models; none = any */
  uint32_t nmodels;
  double weight; /* > 0; normalised when used */
} sf_shape_t;

typedef struct {
  char node_prefix[SF_POLICY_NAME_MAX];
  char model[SF_POLICY_NAME_MAX];
  uint32_t size;
} sf_island_rule_t;

typedef struct sf_policy {
  sf_strategy_t strategy;
  sf_choice_t device_choice;
  char capacity[SF_POLICY_NAME_MAX];
  char model_attribute[SF_POLICY_NAME_MAX];
  char island_attribute[SF_POLICY_NAME_MAX];
  sf_island_rule_t *island_rules;
  size_t nisland_rules; /* the policy's (sf_policy_dispose) */
  sf_shape_t *mix;
  size_t nmix; /* the policy's (sf_policy_dispose) */
  double weight_frag, weight_island, weight_model, weight_unfed, weight_plan, weight_strand,
      weight_fill;
  uint32_t mix_coverage;
  uint32_t max_sharers;
  uint32_t headroom_pct;
  uint32_t search_budget;
  sf_cpu_only_t cpu_only_pods;
  uint32_t defrag_max_evictions, defrag_max_per_hour, defrag_budget;
  char defrag_protect_namespaces[SF_POLICY_NAME_MAX];
} sf_policy_t;

/* The range a policy search draws a numeric key from (bin/slicefit-replay --search). */
typedef struct {
  double lo, hi; /* lo < hi; lo == hi == 0: the search leaves the key alone */
  bool log;      /* drawn uniformly in log(lo)..log(hi) (lo > 0) */
  bool integer;  /* whole numbers lo..hi, each about equally likely */
  double keep;   /* 0..1: the share of candidates that keep the base's value */
} sf_policy_range_t;

/*
 * One key of the policy, in the one table every list of keys comes from:
 * the parser and the defaults (policy.c), the fast path's memo signature
 * (packer/fast.c hashes every key's value; `places` ones into the placement's
 * signature too), the search's knobs (`search`), the daemon's and the
 * replay's --help, and the keys manifests/policy-configmap.yaml documents
 * (test/manifests checks it holds every key and no other).
 */
/* How policy.c reads and stores a key's value: private to it. */
typedef struct {
  int kind;
  size_t off;      /* of the field in sf_policy_t */
  uint32_t lo, hi; /* integers: range; names: least length; weights: the largest (0: 1e6) */
} sf_policy_rule_t;

typedef struct {
  const char *key;
  const char *def; /* default, as text */
  const char *doc; /* one line */
  bool places;     /* the device a placement takes can depend on it, not only the score */
  sf_policy_range_t search;
  sf_policy_rule_t rule;
} sf_policy_key_t;

/** Every key with its default and meaning; *n gets the count (static data). */
const sf_policy_key_t *sf_policy_keys(size_t *n);

/**
 * A 64-bit hash of every key's value (names to their end, the lists item by
 * item), folded into h; with `places_only`, of the keys that can move a
 * placement alone. Two policies that print the same for every key hash the
 * same. O(size of the policy's values): a few hundred bytes.
 */
uint64_t sf_policy_hash(const sf_policy_t *pol, bool places_only, uint64_t h);

/** Fills in every default. */
void sf_policy_init(sf_policy_t *pol);
/** Frees what the policy owns; the struct may be re-initialised after. */
void sf_policy_dispose(sf_policy_t *pol);
/** Deep copy of src into dst (dst uninitialised or disposed). */
void sf_policy_copy(sf_policy_t *dst, const sf_policy_t *src);

/**
 * Sets one key from its text. On a bad key or value returns SF_EINVAL and
 * writes a message naming both into err; the policy is then unchanged.
 */
int sf_policy_set(sf_policy_t *pol, const char *key, const char *value, char *err, size_t errlen);

/**
 * Builds a policy from key/value pairs on top of the defaults, all or
 * nothing: on any error *out is left untouched. keys/values borrowed. On
 * success *out is overwritten without being disposed: pass an uninitialised
 * or disposed struct.
 */
int sf_policy_from_kv(sf_policy_t *out, const char *const *keys, const char *const *values, size_t n,
                      char *err, size_t errlen);

/**
 * Writes the current value of `key` as text (what sf_policy_set accepts).
 * SF_ENOENT for a bad key; SF_E2BIG when buf is too small (buf then holds a
 * NUL-terminated prefix).
 */
int sf_policy_get(const sf_policy_t *pol, const char *key, char *buf, size_t len);

const char *sf_strategy_name(sf_strategy_t s);

#endif
