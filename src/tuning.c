/* tuning: see tuning.h. */
#include "tuning.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_INT, K_REAL, K_TEXT, K_CHOICE } knob_kind;

typedef struct knob {
    const char *key;
    knob_kind kind;
    size_t offset;      /* of the field in sphsim_tuning */
    long lo, hi;        /* K_INT: the smallest and largest value (`values` says which between) */
    const char *values; /* the values it takes, '|' between them: "auto" first where the device picks;
                           K_CHOICE: the names, the first (after "auto") worth 1, the next 2, ... */
    const char *def;    /* its default, as text */
    const char *help;
} knob;

#define AT(f) offsetof(sphsim_tuning, f)
static const knob knobs[] = {
    { "kernel_dir", K_TEXT, AT(kernel_dir), 0, 0, "PATH", "",
      "read the kernel sources from PATH where it has them (development)" },
    { "build_log", K_INT, AT(build_log), 0, 1, "0|1", "0", "print each OpenCL program's build log" },
    { "sort_check", K_INT, AT(sort_check), 0, 1, "auto|0|1", "auto",
      "a rebuild whose cell keys are in order skips the sort (auto: 1 in particle mode)" },
    { "go_ahead", K_INT, AT(go_ahead), 0, 1, "auto|0|1", "auto",
      "queue a kept step's densities before reading the rebuild decision (auto: 1 on GPUs)" },
    { "list_build", K_CHOICE, AT(list_build), 0, 0, "auto|apart|fused", "auto",
      "neighbour lists built alone, or with the densities on the same walk (auto: apart on GPUs)" },
    { "list_check", K_INT, AT(list_check), 0, 1, "0|1", "1",
      "the relative-motion check that keeps lists after a move of skin / 2" },
    { "skin_levels", K_INT, AT(skin_levels), 1, 4, "auto|1-4", "auto",
      "levels of the adaptive list skin (auto: 4 on GPUs, 1 on CPUs)" },
    { "skin_c", K_REAL, AT(skin_c), 0, 0, "auto|C > 0", "auto",
      "the adaptive skin's cost constant, steps x skin (auto: 2.4)" },
    { "list_pack", K_INT, AT(list_pack), 1, 4, "auto|1|4", "auto",
      "list entries per load (auto: 4 on GPUs, 1 on CPUs)" },
    { "list_parts", K_INT, AT(list_parts), 1, 4, "auto|1-4", "auto",
      "buffers the neighbour lists take at least (auto: the fewest the device allows)" },
    { "cell_lanes", K_INT, AT(cell_lanes), 1, 32, "auto|1-32", "auto",
      "work-items per cell of the relative-motion check (auto: 8 on GPUs, 1 on CPUs)" },
    { "sph_local", K_INT, AT(sph_local), 1, 1024, "auto|1-1024", "auto",
      "work-group size of the SPH and list kernels (auto: 128 on GPUs, 512 on CPUs)" },
    { "density_regs", K_INT, AT(density_regs), 0, 255, "auto|0|16-255", "auto",
      "register cap of the density and list programs, 0: none (auto: 40 on NVIDIA's GPUs)" },
    { "native_math", K_INT, AT(native_math), 0, 1, "auto|0|1", "auto",
      "native_sqrt and native_divide in the pair loops (auto: 1 on NVIDIA's GPUs)" },
    { "contact_ahead", K_INT, AT(contact_ahead), 0, 64, "auto|0-64", "auto",
      "contact stages: fetch the slots of the sphere N items ahead, 0: none (auto: 4 on CPUs, 0 on GPUs)" },
    { "contact_cache", K_INT, AT(contact_cache), 0, 1, "auto|0|1", "auto",
      "contact stages: the impulse passes read each contact's geometry from a cache of 48 B a slot (auto: on "
      "CPUs while it takes at most a quarter of their memory, off on GPUs)" },
    { "init_threads", K_INT, AT(init_threads), 1, 64, "auto|1-64", "auto",
      "host threads of the initial state and of touching staging memory" },
    { "writer_threads", K_INT, AT(writer_threads), 1, 64, "auto|1-64", "auto",
      "host threads of a snapshot's id order" },
    { "staging_buffers", K_INT, AT(staging_buffers), 1, 2, "auto|1|2", "auto",
      "snapshot staging buffers (auto: 2 unless they take half the host's memory)" },
    { "host_memory", K_REAL, AT(host_memory), 0, 0, "auto|BYTES", "auto",
      "host memory the run may plan for (auto: the machine's)" },
    { "profile_events", K_INT, AT(profile_events), 0, 1, "0|1", "1",
      "with --profile, time every device command (0: time the steps alone)" },
    { "mpi_exchange", K_INT, AT(mpi_exchange), 0, 1, "0|1", "0",
      "exchange the particles every step on one MPI rank too (1: its result equals any rank count's)" },
    { "mpi_piece", K_INT, AT(mpi_piece), 1, 1073741824, "auto|1-1073741824", "auto",
      "largest message of the MPI exchanges, in bytes (auto: 1 GiB)" },
    { "mpi_rebalance", K_REAL, AT(mpi_rebalance), 0, 0, "auto|F > 0", "auto",
      "the ranks' imbalance (largest / mean - 1) that moves the slab cuts (auto: 0.1)" },
};
#undef AT

void tuning_defaults(sphsim_tuning *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < tuning_count(); ++i) tuning_set(t, knobs[i].key, knobs[i].def, "default", NULL);
}

int tuning_count(void) { return (int)(sizeof knobs / sizeof *knobs); }
const char *tuning_key(int i) { return i >= 0 && i < tuning_count() ? knobs[i].key : NULL; }

const char *tuning_env_name(int i)
{
    static char buf[64];
    const char *k = tuning_key(i);
    if (!k) return NULL;
    size_t n = (size_t)snprintf(buf, sizeof buf, "SPHSIM_");
    for (; *k && n + 1 < sizeof buf; ++k) buf[n++] = (char)toupper((unsigned char)*k);
    buf[n] = '\0';
    return buf;
}

/* Position of `name` among the '|'-separated `values` after a leading "auto", from 1; 0 if absent. */
static int choice_of(const char *values, const char *name)
{
    const size_t len = strlen(name);
    int k = 0;
    for (const char *p = values; *p; ++k) {
        const char *end = strchr(p, '|');
        const size_t w = end ? (size_t)(end - p) : strlen(p);
        if (k > 0 && w == len && !strncmp(p, name, len)) return k;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

/* Is v one of a K_INT knob's `values`: a number N, or a range A-B, between the '|'s? */
static int int_allowed(const knob *kb, long v)
{
    if (v < kb->lo || v > kb->hi) return 0;
    for (const char *p = kb->values; *p;) {
        char *end;
        const long a = strtol(p, &end, 10);
        if (end != p) {
            long b = a;
            if (*end == '-') b = strtol(end + 1, &end, 10);
            if (v >= a && v <= b) return 1;
        }
        p = strchr(p, '|');
        if (!p) break;
        ++p;
    }
    return 0;
}

sphsim_status tuning_set(sphsim_tuning *t, const char *key, const char *value, const char *origin, sphsim_error *e)
{
    const knob *kb = NULL;
    for (int i = 0; i < tuning_count() && !kb; ++i)
        if (!strcmp(knobs[i].key, key)) kb = &knobs[i];
    if (!kb)
        return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "%s: unknown tuning key '%s' (sphsim --help lists them)", origin, key);
    char *field = (char *)t + kb->offset;
    const int is_auto = !strncmp(kb->values, "auto|", 5) && !strcmp(value, "auto");
    char *end = NULL;
    switch (kb->kind) {
    case K_TEXT: *(const char **)field = *value ? value : NULL; return SPHSIM_OK;
    case K_CHOICE: {
        const int c = is_auto ? TUNE_AUTO : choice_of(kb->values, value);
        if (c == 0) break;
        *(int *)field = c;
        return SPHSIM_OK;
    }
    case K_INT: {
        const long v = is_auto ? TUNE_AUTO : strtol(value, &end, 10);
        if (!is_auto && (end == value || *end || !int_allowed(kb, v))) break;
        *(int *)field = (int)v;
        return SPHSIM_OK;
    }
    case K_REAL: {
        const double v = is_auto ? 0.0 : strtod(value, &end);
        if (!is_auto && (end == value || *end || !(v > 0.0) || v > 1e300)) break;
        *(double *)field = v;
        return SPHSIM_OK;
    }
    }
    return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "%s: %s=%s: expected %s", origin, key, value, kb->values);
}

void tuning_help(FILE *f)
{
    for (int i = 0; i < tuning_count(); ++i) {
        const knob *kb = &knobs[i];
        fprintf(f, "  %-16s %-15s %-5s %s\n", kb->key, kb->values, kb->def[0] ? kb->def : "-", kb->help);
    }
}
