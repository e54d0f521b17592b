/* tuning: the knobs that change how sphsim runs, never what it computes, in one struct.
 *
 * main.c fills it once, from the defaults, then the SPHSIM_<KEY> environment variables, then
 * the --tune KEY=VALUE options, and passes it down; no other module reads the environment.
 * Each knob's default is "auto", resolved by the module that uses it from the device (a GPU or
 * a CPU, NVIDIA's platform or another), as measured in docs/performance.md. Tests set fields
 * directly. `sphsim --help` and the manual page list the keys (tuning_help). */
#ifndef SPHSIM_TUNING_H
#define SPHSIM_TUNING_H

#include <stdio.h>

#include "status.h"

#define TUNE_AUTO (-1)

/* tuning.list_build */
enum { LIST_BUILD_APART = 1, LIST_BUILD_FUSED = 2 };

typedef struct sphsim_tuning {
    /* development */
    const char *kernel_dir; /* read the kernel sources from this folder (NULL: those in the binary) */
    int build_log;          /* 1: print every program's build log to stderr */
    /* neighbour grid (src/grid.c, src/sim.c) */
    int sort_check; /* TUNE_AUTO (1 in particle mode, 0 for SPH), 0, 1: a rebuild whose keys are in
                       order already skips the sort and the gathers (the host reads one word) */
    /* neighbour lists (src/nlist.c) */
    int go_ahead;    /* TUNE_AUTO (GPUs), 0, 1: queue a kept step's densities before the decision's read */
    int list_build;  /* TUNE_AUTO (GPUs apart), LIST_BUILD_APART, LIST_BUILD_FUSED */
    int list_check;  /* 1 (default), 0: rebuild whenever a particle moved skin / 2, without the check */
    int skin_levels; /* TUNE_AUTO (GPUs 4, CPUs 1), 1-4: levels of the adaptive skin */
    double skin_c;   /* 0: 2.4; the adaptive skin's cost constant (steps x skin) */
    int list_pack;   /* TUNE_AUTO (GPUs 4, CPUs 1), 1, 4: list entries per load */
    int list_parts;  /* TUNE_AUTO (the fewest that fit), 1-4: buffers the lists take at least */
    int cell_lanes;  /* TUNE_AUTO (GPUs 8, CPUs 1), 1-32: work-items per cell of the check's boxes */
    /* SPH kernels (src/sph.c) */
    int sph_local;    /* TUNE_AUTO (GPUs 128, CPUs 512), 1-1024: work-group size */
    int density_regs; /* TUNE_AUTO (40 on NVIDIA's GPUs), 0 (no cap), 16-255: register cap of the
                         density and list programs (NVIDIA only) */
    int native_math;  /* TUNE_AUTO (NVIDIA's GPUs), 0, 1: native_sqrt/native_divide in the pair loops */
    /* contact solver (src/contact.c) */
    int contact_ahead; /* TUNE_AUTO (CPUs 4, GPUs 0), 0-64: the stages request the contact slots of the
                          sphere that many items ahead (0: none) */
    int contact_cache; /* TUNE_AUTO (CPUs 1 while it takes at most a quarter of their memory, GPUs 0), 0, 1:
                          the impulse passes read the contacts' geometry from a cache the warm start fills
                          (CONTACT_CACHE_BYTES a slot) */
    /* host */
    int init_threads;    /* TUNE_AUTO, 1-64: threads of the initial state and of page touching */
    int writer_threads;  /* TUNE_AUTO, 1-64: threads of a snapshot's id order */
    int staging_buffers; /* TUNE_AUTO, 1, 2: snapshot staging buffers */
    double host_memory;  /* 0: the machine's; bytes of host memory to assume */
    int profile_events;  /* 1 (default), 0: --profile times the steps with the queue's profiling off */
    /* MPI (src/sim.c, docs/mpi.md) */
    int mpi_exchange;     /* 0 (default): the particles go round the ranks every step on more than one
                             rank only; 1: also on one (its result then equals any rank count's) */
    double mpi_rebalance; /* 0: 0.1; the imbalance (largest rank's particles / mean - 1) that moves the cuts */
    int mpi_piece;        /* TUNE_AUTO (1 GiB), 1-2^30: the largest message of an exchange, in bytes (a rank's
                             share goes in as many as it takes) */
} sphsim_tuning;

/* Every knob at its default. */
void tuning_defaults(sphsim_tuning *t);

/* Set knob `key` from text `value` ("auto" where the knob has that default). SPHSIM_E_USAGE
 * naming `origin` (e.g. "--tune" or "SPHSIM_SKIN_LEVELS") on an unknown key or a bad value. */
sphsim_status tuning_set(sphsim_tuning *t, const char *key, const char *value, const char *origin, sphsim_error *e);

/* The knobs' keys, for the environment (SPHSIM_ + the key in capitals): key i for i < tuning_count(). */
int tuning_count(void);
const char *tuning_key(int i);
/* The environment variable of key i (a static buffer). */
const char *tuning_env_name(int i);

/* A line per knob: key, values, default, meaning. */
void tuning_help(FILE *f);

#endif
