/* SPDX-License-Identifier: Apache-2.0 */
/* Small statistics the benchmarks share. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

/* The median of v[0..n) (n >= 1); sorts v in place. */
double bench_median(double *v, int n);

#endif
