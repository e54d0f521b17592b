/* cli: the command line, parsed strictly into `cli_args` (no printing, no exit). */
#ifndef SPHSIM_CLI_H
#define SPHSIM_CLI_H

#include "scene.h"
#include "sim.h"

#define CLI_MAX_TUNES 64

typedef enum { CLI_RUN = 0, CLI_CHECK, CLI_LIST_DEVICES, CLI_HELP, CLI_VERSION } cli_action;

/* The longest output path taken (-o, --resume): its temporary names add a few characters. */
#define CLI_PATH_MAX 3999

typedef struct cli_args {
    cli_action action;
    const char *scene_path;
    const char *out_path;
    const char *resume_path;
    const char *device;
    const char *sets[SCENE_MAX_SETS];
    int n_sets;
    const char *tunes[CLI_MAX_TUNES]; /* --tune KEY=VALUE (tuning.h), applied after the environment */
    int n_tunes;
    int overwrite;
    int quiet;
    int stats;
    int profile;
    sim_progress progress;
} cli_args;

/* Parse argv. SPHSIM_E_USAGE with a message on bad usage. */
sphsim_status cli_parse(int argc, char **argv, cli_args *a, sphsim_error *e);

/* The --help text (main.c appends the tuning keys, tuning_help). */
extern const char cli_usage[];

#endif
