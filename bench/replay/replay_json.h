/*
 * What the replay's two reports (replay_report.c, replay_churn_report.c)
 * share: JSON lines written one way, figures rounded one way, and the median
 * of one field over runs. Not a public header.
 */
#ifndef SF_REPLAY_JSON_H
#define SF_REPLAY_JSON_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

/** A figure for JSON: rounded to 3 decimals; null when not finite. New reference. */
json_t *sf__replay_json_num(double v);
/** Writes `o` (steals it) as one compact line, members in order, reals to 7 digits. */
void sf__replay_json_emit(FILE *out, json_t *o);
/** The median (sf_replay_median) over n records `stride` bytes apart of the double at byte `off`. */
double sf__replay_median_at(const void *recs, size_t n, size_t stride, size_t off);

#endif
