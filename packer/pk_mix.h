/*
 * The packer's side of the workload mix: the shapes one call scores
 * fragmentation against (the policy's fgd_mix, the index's learned mix, or
 * the demand's own shapes), their hash, and the models' scarcity. Private
 * to packer/.
 */
#ifndef SF_PACKER_PK_MIX_H
#define SF_PACKER_PK_MIX_H

#include "index_int.h"
#include "pk_plan.h"
#include "slicefit/mix.h"
#include "slicefit/packer.h"

#define WEIGHT_ONE 65536.0
#define MIX_UNIVERSE 256 /* shapes a drift epoch's set can name */
#define MIX_SETWORDS (MIX_UNIVERSE / 64)
#define MIX_EPOCHS 1024  /* epochs whose set is kept (sf_mix_joined) */
#define MIX_HISTORY 4096 /* mixes kept, with bounds on (sf_mix_since) */

/* One mix as it was: its shapes' universe ids and weights. */
typedef struct {
  uint64_t moves; /* which one (drift.moves then) */
  uint16_t n;
  uint16_t uid[SF__MIX_MAX + 1];
  int32_t q[SF__MIX_MAX + 1];
} mixpast_t;

/* One shape of the mix being scored against. */
typedef struct {
  sf_milli_t cpu_milli;
  sf_milli_t amount; /* 0: whole devices */
  uint32_t count;    /* 0: asks for no device */
  bool island;
  uint64_t models; /* 0: any */
  double w;
  int64_t q; /* w in steps of 1/WEIGHT_ONE */
} shape_t;

/* Shapes of the mix alike but for their CPU: one GPU side (what a device hosts) for them all. */
typedef struct {
  uint32_t first, n; /* its shapes: pk_mix_t.member[first .. first + n) */
} group_t;

typedef struct {
  shape_t mix[SF__MIX_MAX + 1];
  size_t nmix;
  group_t group[SF__MIX_MAX + 1];
  size_t ngroup;
  uint16_t member[SF__MIX_MAX + 1]; /* shape indices, group by group */
  bool islands;                     /* a shape needs one island */
  uint64_t mixhash;                 /* shapes and weights, and the plans' K */
  bool churning;                    /* the index's sf_mix_churning as read */
  uint64_t rawhash;                 /* shapes and weights alone, and churning */
  uint64_t shapehash;               /* shapes only: what per-shape statistics depend on */
  double scarcity[SF__MODELS + 1];
  /* the index's learned mix, as last read */
  sf__shape_t learned[SF__MIX_MAX];
  size_t nlearned;
  uint64_t learned_version, learned_serial;
  uint32_t coverage; /* the policy's mix_coverage it was cut at */
  double least;      /* the least weight a learned shape needs to be scored */
  bool from_learned; /* mix[] is the learned mix as last read */
  /* the mix and the devices' models scarcity[] was worked out for */
  uint64_t scarcity_of, scarcity_serial;
  uint32_t scarcity_devs[SF__MODELS + 1];
  /* how far the mix scored moved (sf_mix_drift), and the mix and scarcity last loaded */
  sf_mix_drift_t drift;
  shape_t prev[SF__MIX_MAX + 1];
  size_t nprev;
  uint64_t prevhash, prevshapes, prevepoch;
  double prevscarcity[SF__MODELS + 1];
  /* every shape scored since the universe began; ids of mix[] and prev[]; each recent epoch's set */
  shape_t uni[MIX_UNIVERSE];
  uint32_t nuni;
  uint16_t uid[SF__MIX_MAX + 1], prevuid[SF__MIX_MAX + 1];
  uint64_t sets[MIX_EPOCHS][MIX_SETWORDS];
  mixpast_t *past;   /* MIX_HISTORY of them, a ring, with bounds on; NULL otherwise */
  uint64_t reset_at; /* drift.moves when the universe last began again (older ids mean nothing) */
  /* the plans of the shares, per device capacity (pk_plan.h; its hash is folded into mixhash) */
  pk_plan_t plan;
} pk_mix_t;

/* Keeps (on) or drops the past mixes sf_mix_since compares with. */
void sf__mix_history(pk_mix_t *mx, bool on);

/* Loads the call's mix: the policy's (fgd with fgd_mix), else the learned one, else the demand's own. */
void sf__mix_load(sf_packer_t *p);
/* Loads each model's scarcity against the mix. */
void sf__mix_scarcity(sf_packer_t *p);
/* Adds (+1) or takes back (-1) the demand's shapes in the index's learned mix. */
void sf__mix_learn(sf_packer_t *p, int sign);

#endif
