/*
 * One packer per thread: the core keeps no state outside the packer and
 * the index it is handed, so two threads, each with its own index and
 * packer, get the answers one thread gets. Run under helgrind or TSan to
 * see it race-free:
 *   valgrind --tool=helgrind build/release/test-packer --filter 'threads/two*' --jobs 1
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cluster.h"
#include "slicefit/policy.h"

#define TNODES 40
#define TCALLS 60

typedef struct {
  const char *strategy, *choice;
  double raw[TCALLS][TNODES];
  int fit[TCALLS][TNODES];
} run_t;

static void *run(void *arg)
{
  run_t *r = arg;
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create();
  sf_policy_t pol;
  sf_policy_init(&pol);
  char err[200], name[32];
  sf_policy_set(&pol, "strategy", r->strategy, err, sizeof(err));
  sf_policy_set(&pol, "device_choice", r->choice, err, sizeof(err));
  sf_policy_set(&pol, "island_map", "H100=4,A100=2", err, sizeof(err));
  sf_node_id nodes[TNODES];
  for (int i = 0; i < TNODES; i++) {
    snprintf(name, sizeof(name), "node-%02d", i);
    nodes[i] = i % 3 == 0   ? tc_node(idx, name, 8, "NVIDIA H100", 80 * GiB, true)
               : i % 3 == 1 ? tc_node_range(idx, name, 4, "NVIDIA A100", 40 * GiB, GiB, GiB)
                            : tc_node(idx, name, 2, "RTX 4000", 20 * GiB, false);
  }
  sf_index_apply_policy(idx, &pol);
  sf_verdict_t v[TNODES];
  for (int c = 0; c < TCALLS; c++) {
    tc_claim_t cl;
    if (c % 4 == 3)
      tc_claim_island(&cl, 2);
    else
      tc_claim(&cl, 1 + (uint32_t)(c % 2), (sf_milli_t)(1 + c % 7) * GiB);
    sf_packer_evaluate(pk, idx, &pol, &cl.dem, nodes, TNODES, SF_EVAL_LEARN, v);
    int best = -1;
    for (int i = 0; i < TNODES; i++) {
      r->raw[c][i] = v[i].raw;
      r->fit[c][i] = v[i].fit;
      if (v[i].fit == SF_FIT_YES && (best < 0 || v[i].score > v[best].score))
        best = i;
    }
    if (best >= 0 && sf_packer_place(pk, idx, &pol, &cl.dem, nodes[best], NULL, NULL) == SF_FIT_YES) {
      snprintf(name, sizeof(name), "pod-%d", c);
      sf_packer_commit(pk, idx, &cl.dem, name, NULL);
    }
  }
  sf_policy_dispose(&pol);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
  return NULL;
}

static void same(const run_t *a, const run_t *b)
{
  int fits = 0;
  for (int c = 0; c < TCALLS; c++)
    for (int i = 0; i < TNODES; i++) {
      cr_assert_eq(a->fit[c][i], b->fit[c][i], "call %d node %d", c, i);
      cr_assert(a->raw[c][i] == b->raw[c][i], "call %d node %d: %g vs %g", c, i, a->raw[c][i],
                b->raw[c][i]);
      fits += a->fit[c][i] == SF_FIT_YES;
    }
  cr_assert_gt(fits, TCALLS);
}

static void two_threads(const char *strategy, const char *choice)
{
  static run_t alone, t1, t2; /* big: not on the stack */
  alone = (run_t){.strategy = strategy, .choice = choice};
  t1 = alone;
  t2 = alone;
  run(&alone);
  pthread_t a, b;
  cr_assert_eq(pthread_create(&a, NULL, run, &t1), 0);
  cr_assert_eq(pthread_create(&b, NULL, run, &t2), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  same(&alone, &t1);
  same(&alone, &t2);
}

Test(threads, two_packers_answer_as_one_fragmentation)
{
  two_threads("fragmentation", "packer");
}
Test(threads, two_packers_answer_as_one_spread)
{
  two_threads("spread", "packer");
}
