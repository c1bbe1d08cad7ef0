/*
 * The packer's state: one struct per module, each named in its own header.
 *
 *   pk_demand.h  the call's requests, slots and constraints    (demand.c)
 *   pk_view.h    per-node summaries every rule reads            (view.c)
 *   pk_search.h  candidates, tentative overlay, placements      (search.c)
 *   pk_mix.h     the mix a call scores against, scarcity        (mix.c)
 *   pk_plan.h    the plan of the shares: LP, K, inputs, loss    (plan.c)
 *   pk_score.h   the one scoring kernel                         (score.c)
 *   pk_reason.h  reasons for nodes that do not fit              (reason.c)
 *   pk_fast.h    the fast path and its per-node memo            (fast.c)
 *
 * packer.c holds the entry points. Everything here is per packer: no
 * state is shared between packers, so one packer per thread is safe.
 */
#ifndef SF_PACKER_PACKER_INT_H
#define SF_PACKER_PACKER_INT_H

#include "pk_demand.h"
#include "pk_fast.h"
#include "pk_mix.h"
#include "pk_reason.h"
#include "pk_score.h"
#include "pk_search.h"
#include "pk_view.h"

struct sf_packer {
  /* the call */
  sf_index_t *idx;
  const sf_policy_t *pol;
  sf_node_id node;      /* being evaluated */
  uint64_t stamp;       /* this call */
  sf_node_id last_node; /* of the last placement, for commit; -1: none */
  bool host_lags;       /* the call's SF_EVAL_HOST_LAGS */
  pk_demand_t dem;
  pk_view_t view;
  pk_search_t search;
  pk_mix_t mix;
  pk_score_t score;
  pk_reason_t reason;
  pk_fast_t fast;
};

#endif
