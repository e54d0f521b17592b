/* jobs: see jobs.h. */
#include "jobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

unsigned jobs_threads(size_t n, int requested, unsigned share, unsigned max)
{
    if (requested >= 1 && requested <= JOBS_MAX) return (unsigned)requested;
    if (n < ((size_t)1 << 18)) return 1;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN) / (long)(share ? share : 1);
    const long t = cpus > (long)max ? (long)max : cpus;
    return t > 1 ? (unsigned)(t < JOBS_MAX ? t : JOBS_MAX) : 1;
}

void jobs_run(void *(*fn)(void *), void *jobs, size_t job_size, unsigned t)
{
    pthread_t th[JOBS_MAX];
    unsigned m = 0;
    char *job = jobs;
    if (t > JOBS_MAX) t = JOBS_MAX;
    for (unsigned j = 1; j < t; ++j)
        if (pthread_create(&th[m], NULL, fn, job + j * job_size) == 0) ++m;
        else fn(job + j * job_size);
    if (t > 0) fn(job);
    for (unsigned j = 0; j < m; ++j) pthread_join(th[j], NULL);
}
