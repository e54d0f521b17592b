/* jobs: the host's large O(n) passes (a snapshot's id order, the initial state) split over
 * threads, each job a contiguous range that no other job writes. */
#ifndef SPHSIM_JOBS_H
#define SPHSIM_JOBS_H

#include <stddef.h>

#define JOBS_MAX 64

/* Threads for a pass over n items: `requested` when it is 1-64 (a tuning knob, tuning.h), else
 * 1 below 2^18 items, where starting threads costs more than it saves, else the host's
 * processors divided by `share`, at most `max`. */
unsigned jobs_threads(size_t n, int requested, unsigned share, unsigned max);

/* Runs fn on each of the t jobs (an array of job_size-byte records, t <= JOBS_MAX): the first
 * on this thread, the others on their own (or here, one after another, if a thread cannot
 * start), and waits for all. */
void jobs_run(void *(*fn)(void *), void *jobs, size_t job_size, unsigned t);

#endif
