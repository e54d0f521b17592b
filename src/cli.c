/* cli: the command line, parsed strictly into `cli_args`. */
#include "cli.h"

#include <string.h>

const char cli_usage[] =
    "usage: sphsim SCENE.json [-o OUT.h5] [options]\n"
    "       sphsim --resume OUT.h5 [options]\n"
    "       sphsim SCENE.json --check [--set PATH=VALUE ...]\n"
    "       sphsim --list-devices | --version | --help\n"
    "\n"
    "Simulates the SPH fluid or hard-sphere scene in SCENE.json on an OpenCL device and writes\n"
    "snapshots to OUT.h5 (VTKHDF, for ParaView 5.12+, VTK 9.3+, h5py) and OUT.xmf (XDMF, for\n"
    "ParaView 5.11 and VisIt). Progress goes to stderr; one JSON summary line goes to stdout.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT.h5     output file (default: the scene's name + .h5 in the current directory)\n"
    "      --overwrite         replace an existing output file (never done without this)\n"
    "      --set PATH=VALUE    override a scene key, e.g. --set fluid.spacing=0.005\n"
    "                          --set tank.max[1]=2 --set fluid.kernel=cubic_spline (repeatable;\n"
    "                          VALUE is JSON, or a string when it is not valid JSON)\n"
    "      --check             validate the scene and print it resolved, with derived values\n"
    "                          (particles, h, time step, steps, device memory, output size); runs nothing\n"
    "      --resume OUT.h5     continue a stopped run from the last snapshot in OUT.h5; with\n"
    "                          --set time.end=T, run a finished one further, to a later end\n"
    "      --device SEL        OpenCL device: an index from --list-devices, gpu, cpu, or part of\n"
    "                          its name (default: $SPHSIM_DEVICE, else the first GPU, else the CPU)\n"
    "      --list-devices      list the OpenCL devices and exit\n"
    "      --progress MODE     auto (a live line on a terminal, a line every 10 s otherwise),\n"
    "                          plain, json (JSON lines on stderr), none\n"
    "      --stats             record mean neighbours and candidates per query at each snapshot\n"
    "      --profile           time the device stages (OpenCL profiling)\n"
    "      --tune KEY=VALUE    set a tuning knob (below; repeatable); SPHSIM_KEY=VALUE in the\n"
    "                          environment does the same, --tune wins (docs: man sphsim, TUNING)\n"
    "  -q, --quiet             print nothing but errors on stderr (the summary line stays)\n"
    "      --version           print the version and exit\n"
    "  -h, --help              print this help and exit\n"
    "\n"
    "exit codes:\n"
    "  0 success, 2 usage error, 3 invalid scene, 4 input/output error,\n"
    "  5 OpenCL device or kernel build error, 6 numerical failure (NaN, Inf, runaway velocity),\n"
    "  130 stopped by SIGINT, 143 stopped by SIGTERM (the output keeps every finished snapshot)\n"
    "\n"
    "environment: SPHSIM_DEVICE (device selector), SPHSIM_<KEY> (a tuning knob)\n"
    "\n"
    "tuning knobs (key, values, default, meaning):\n";

static int is(const char *arg, const char *s, const char *l)
{
    return (s && !strcmp(arg, s)) || (l && !strcmp(arg, l));
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE". */
static const char *value_of(int argc, char **argv, int *i, const char *lname, sphsim_error *e)
{
    const char *arg = argv[*i];
    size_t ln = strlen(lname);
    if (!strncmp(arg, lname, ln) && arg[ln] == '=') return arg + ln + 1;
    if (*i + 1 >= argc) {
        SPHSIM_FAIL(e, SPHSIM_E_USAGE, "option %s needs a value", arg);
        return NULL;
    }
    return argv[++*i];
}

static int has_value_form(const char *arg, const char *lname)
{
    size_t ln = strlen(lname);
    return !strcmp(arg, lname) || (!strncmp(arg, lname, ln) && arg[ln] == '=');
}

sphsim_status cli_parse(int argc, char **argv, cli_args *a, sphsim_error *e)
{
    memset(a, 0, sizeof *a);
    a->action = CLI_RUN;
    int check = 0, list = 0;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        const char *v;
        if (is(arg, "-h", "--help")) {
            a->action = CLI_HELP;
            return SPHSIM_OK;
        } else if (is(arg, NULL, "--version")) {
            a->action = CLI_VERSION;
            return SPHSIM_OK;
        } else if (is(arg, "-o", NULL) || has_value_form(arg, "--output")) {
            if (!(v = value_of(argc, argv, &i, "--output", e))) return SPHSIM_E_USAGE;
            if (!*v) return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "-o: empty output path");
            a->out_path = v;
        } else if (has_value_form(arg, "--set")) {
            if (!(v = value_of(argc, argv, &i, "--set", e))) return SPHSIM_E_USAGE;
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: expected PATH=VALUE, e.g. --set fluid.spacing=0.01",
                                   v);
            if (a->n_sets >= SCENE_MAX_SETS)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "too many --set options (at most %d)", SCENE_MAX_SETS);
            a->sets[a->n_sets++] = v;
        } else if (has_value_form(arg, "--tune")) {
            if (!(v = value_of(argc, argv, &i, "--tune", e))) return SPHSIM_E_USAGE;
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || eq - v >= 64)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--tune %s: expected KEY=VALUE, e.g. --tune skin_levels=1", v);
            if (a->n_tunes >= CLI_MAX_TUNES)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "too many --tune options (at most %d)", CLI_MAX_TUNES);
            a->tunes[a->n_tunes++] = v;
        } else if (has_value_form(arg, "--device")) {
            if (!(v = value_of(argc, argv, &i, "--device", e))) return SPHSIM_E_USAGE;
            a->device = v;
        } else if (has_value_form(arg, "--resume")) {
            if (!(v = value_of(argc, argv, &i, "--resume", e))) return SPHSIM_E_USAGE;
            a->resume_path = v;
        } else if (has_value_form(arg, "--progress")) {
            if (!(v = value_of(argc, argv, &i, "--progress", e))) return SPHSIM_E_USAGE;
            if (!strcmp(v, "auto")) a->progress = PROGRESS_AUTO;
            else if (!strcmp(v, "plain")) a->progress = PROGRESS_PLAIN;
            else if (!strcmp(v, "json")) a->progress = PROGRESS_JSON;
            else if (!strcmp(v, "none")) a->progress = PROGRESS_NONE;
            else return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--progress %s: expected auto, plain, json or none", v);
        } else if (is(arg, NULL, "--check")) {
            check = 1;
        } else if (is(arg, NULL, "--list-devices")) {
            list = 1;
        } else if (is(arg, NULL, "--overwrite")) {
            a->overwrite = 1;
        } else if (is(arg, "-q", "--quiet")) {
            a->quiet = 1;
        } else if (is(arg, NULL, "--stats")) {
            a->stats = 1;
        } else if (is(arg, NULL, "--profile")) {
            a->profile = 1;
        } else if (!strcmp(arg, "--")) {
            for (++i; i < argc; ++i) {
                if (a->scene_path)
                    return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "more than one scene given (%s and %s)", a->scene_path,
                                       argv[i]);
                a->scene_path = argv[i];
            }
        } else if (arg[0] == '-' && arg[1]) {
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "unknown option %s", arg);
        } else {
            if (a->scene_path)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "more than one scene given (%s and %s)", a->scene_path, arg);
            a->scene_path = arg;
        }
    }
    if (list) {
        a->action = CLI_LIST_DEVICES;
        return SPHSIM_OK;
    }
    /* the output's name, and its temporary names (OUT.h5.creating, .relayout), in whole */
    const char *paths[2] = { a->out_path, a->resume_path }, *opts[2] = { "-o", "--resume" };
    for (int k = 0; k < 2; ++k)
        if (paths[k] && strlen(paths[k]) > CLI_PATH_MAX)
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "%s: the path is %zu characters long; at most %d are supported",
                               opts[k], strlen(paths[k]), CLI_PATH_MAX);
    if (a->resume_path) {
        if (check) return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--check and --resume do not go together");
        for (int i = 0; i < a->n_sets; ++i)
            if (strncmp(a->sets[i], "time.end=", 9) != 0) {
                const char *eq = strchr(a->sets[i], '=');
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE,
                                   "--set %.*s cannot change a resumed run: it continues with the scene stored in %s; "
                                   "only time.end can be set, to run further",
                                   eq ? (int)(eq - a->sets[i]) : (int)strlen(a->sets[i]), a->sets[i], a->resume_path);
            }
        if (a->out_path && strcmp(a->out_path, a->resume_path))
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--resume appends to %s itself; -o %s is not allowed with it",
                               a->resume_path, a->out_path);
        if (a->scene_path)
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE,
                               "--resume takes the scene stored in %s; do not give a scene file (%s)", a->resume_path,
                               a->scene_path);
        return SPHSIM_OK;
    }
    if (!a->scene_path) return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "no scene file given");
    if (check) a->action = CLI_CHECK;
    return SPHSIM_OK;
}
