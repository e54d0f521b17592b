/* jobs: see jobs.h. */
#include "jobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

unsigned jobs_threads(size_t n, const char *env, unsigned share, unsigned max)
{
    const char *v = env ? getenv(env) : NULL;
    if (v && *v) {
        char *end;
        const unsigned long t = strtoul(v, &end, 10);
        if (*end == '\0' && t >= 1 && t <= JOBS_MAX) return (unsigned)t;
    }
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
