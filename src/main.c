/* main: the only place that prints usage, maps a status to an exit code, and exits. */
#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "contact.h"
#include "device.h"
#include "nlist.h"
#include "output.h"
#include "scene.h"
#include "sim.h"
#include "sph.h"
#include "tuning.h"

static volatile sig_atomic_t stop_signal = 0;
static struct timespec stop_time; /* when stop_signal was first set */

/* The first SIGINT or SIGTERM asks the run to stop after its step (sim.c); a second one stops at
 * once, unless it is the same signal within a second of the first: timeout(1) sends its signal
 * to the command and then to the command's process group, so sphsim gets it twice. */
static void on_signal(int sig)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    if (stop_signal == 0) {
        stop_time = now;
        stop_signal = sig;
        return;
    }
    const double since = (double)(now.tv_sec - stop_time.tv_sec) + 1e-9 * (double)(now.tv_nsec - stop_time.tv_nsec);
    if (sig == stop_signal && since < 1.0) return;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int exit_code(sphsim_status st, int sig)
{
    switch (st) {
    case SPHSIM_OK: return 0;
    case SPHSIM_E_USAGE: return 2;
    case SPHSIM_E_SCENE: return 3;
    case SPHSIM_E_IO:
    case SPHSIM_E_NOMEM: return 4;
    case SPHSIM_E_DEVICE: return 5;
    case SPHSIM_E_NUMERIC: return 6;
    case SPHSIM_E_INTERRUPTED: return sig == SIGTERM ? 143 : 130;
    }
    return 1;
}

/* JSON string body with escapes. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; ++s) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static long snapshots_of(const scene *s)
{
    long n = s->n_steps / s->steps_per_output + 1;
    if (s->n_steps % s->steps_per_output) ++n;
    return n;
}

static void print_check(const scene *s, const sphsim_tuning *t, int quiet)
{
    const double h = s->mode == MODE_PARTICLES ? s->r_max : s->h; /* particles: the largest radius */
    size_t dev = sim_device_bytes(s);
    /* SPH neighbour lists, on top, when the device holds them (grid.neighbour_list) */
    size_t lists =
        s->mode == MODE_SPH && s->neighbour_list != NLIST_OFF ? sim_list_bytes(s, (size_t)s->n_total, 0, t) : 0;
    /* the output file: its layout, allocated in full at creation (output.c), with the solver
     * state stored with each snapshot: the contact solver's, or the neighbour lists' skin level */
    const size_t state = s->mode == MODE_PARTICLES         ? contact_state_size(s->dims, (size_t)s->n_total)
                         : s->neighbour_list != NLIST_OFF ? nlist_state_size()
                                                          : 0;
    double out = output_file_bytes(s, state);
    const size_t host = sim_host_bytes(s, t);
    /* particle mode on a CPU device: the contact geometry cache, on top (tuning contact_cache) */
    const size_t cache = s->mode == MODE_PARTICLES ? contact_cache_bytes(s, (size_t)s->n_total) : 0;
    /* one JSON document on one line: the resolved scene and the derived values */
    cJSON *scene_doc = s->resolved_json ? cJSON_Parse(s->resolved_json) : NULL;
    char *scene_line = scene_doc ? cJSON_PrintUnformatted(scene_doc) : NULL;
    printf("{\"scene\":%s,", scene_line ? scene_line : "{}");
    cJSON_free(scene_line);
    cJSON_Delete(scene_doc);
    printf("\"check\":{\"particles\":%ld,\"fluid_particles\":%ld,\"boundary_particles\":%ld,\"spheres\":%ld,"
           "\"smoothing_length_m\":%.9g,\"support_radius_m\":%.9g,\"dt_s\":%.9g,\"steps\":%ld,\"snapshots\":%ld,"
           "\"estimated_device_bytes\":%zu,\"estimated_list_bytes\":%zu,\"estimated_cache_bytes\":%zu,"
           "\"estimated_host_bytes\":%zu,\"estimated_output_bytes\":%.0f}}\n",
           s->n_total, s->n_fluid, s->n_boundary, s->n_spheres, h, s->support, s->dt, s->n_steps, snapshots_of(s), dev,
           lists, cache, host, out);
    if (quiet) return;
    char cache_note[96] = "";
    if (cache)
        snprintf(cache_note, sizeof cache_note, " (%.3g MB more on a CPU device: the contact geometry cache)",
                 (double)cache / 1e6);
    fprintf(
        stderr,
        "scene %s is valid: %ld particles (%ld fluid, %ld boundary, %ld spheres), h = %.4g m, dt = %.4g s, %ld steps, "
        "%ld snapshots, about %.3g MB of device memory%s%s, %.3g MB of host memory and %.3g MB of output\n",
        s->path[0] ? s->path : s->name, s->n_total, s->n_fluid, s->n_boundary, s->n_spheres, h, s->dt, s->n_steps,
        snapshots_of(s), (double)(dev + lists) / 1e6, lists ? " (the neighbour lists' included)" : "", cache_note,
        host / 1e6, out / 1e6);
}

static void print_summary(const char *out, const sim_result *r, sphsim_status st, const sphsim_error *e)
{
    double pps = r->wall_time > 0 ? (double)r->n_particles * (double)r->steps / r->wall_time : 0.0;
    printf("{\"status\":");
    json_str(stdout, sphsim_status_name(st));
    printf(",\"output\":");
    json_str(stdout, out);
    printf(",\"device\":");
    json_str(stdout, r->device_name);
    printf(",\"particles\":%ld,\"steps\":%ld,\"last_step\":%ld,\"simulated_time_s\":%.9g,\"wall_time_s\":%.4f,"
           "\"particle_steps_per_s\":%.6g,\"snapshots\":%ld,\"particles_outside\":%ld,\"device_bytes\":%zu",
           r->n_particles, r->steps, r->last_step, r->sim_time, r->wall_time, pps, r->snapshots, r->n_outside,
           r->device_bytes);
    if (r->lists)
        printf(",\"neighbour_lists\":true,\"list_rebuilds\":%ld,\"list_checks\":%ld,\"list_checks_skipped\":%ld",
               r->list_rebuilds, r->list_checks, r->list_checks_skipped);
    if (r->contact_cache) printf(",\"contact_cache\":true");
    if (r->mean_candidates > 0)
        printf(",\"mean_neighbours\":%.4g,\"mean_candidates\":%.4g", r->mean_neighbours, r->mean_candidates);
    if (r->mpi_ranks > 0)
        printf(",\"mpi_ranks\":%d,\"mpi_recuts\":%ld,\"mpi_exchanges\":%ld,\"mpi_held\":%.4g", r->mpi_ranks,
               r->mpi_recuts, r->mpi_exchanges, r->mpi_held);
    if (r->mpi_ranks > 1 && r->mpi_io_collective >= 0) /* docs/mpi.md, "Output and restart" */
        printf(",\"mpi_io\":\"%s\",\"mpi_io_rows\":%ld", r->mpi_io_collective ? "collective" : "independent",
               r->mpi_io_rows);
    if (r->n_prof > 0 || r->steps_timed > 0) {
        printf(",\"output_s\":%.6g,\"writer_s\":%.6g,\"writer_phases_s\":{\"copies\":%.6g,\"id_order\":%.6g,"
               "\"file\":%.6g},\"steps_timed\":%ld,\"steps_s\":%.6g,\"profile_s\":{",
               r->t_output, r->t_writer, r->t_writer_phase[0], r->t_writer_phase[1], r->t_writer_phase[2],
               r->steps_timed, r->t_steps);
        for (int i = 0; i < r->n_prof; ++i) {
            printf("%s", i ? "," : "");
            json_str(stdout, r->prof[i].name);
            printf(":%.6g", r->prof[i].seconds);
        }
        /* the device's time between timed commands during the timed steps, under the command
         * after each gap */
        printf("},\"idle_s\":{");
        for (int i = 0, first = 1; i < r->n_prof; ++i) {
            if (r->prof[i].idle <= 0.0) continue;
            printf("%s", first ? "" : ",");
            first = 0;
            json_str(stdout, r->prof[i].name);
            printf(":%.6g", r->prof[i].idle);
        }
        printf("}");
    }
    if (st != SPHSIM_OK) {
        printf(",\"error\":");
        json_str(stdout, e->msg);
    }
    printf("}\n");
    fflush(stdout);
}

/* For --resume: rebuild the scene of the run stored in `path` exactly as it was first loaded:
 * the stored scene text, the same --set overrides and the same file name (the scene name
 * defaults to it), so that the resolved scene is byte-identical to the stored one. A file
 * whose scene resolves differently (another sphsim version, other defaults) is refused: the
 * continuation would not be the same run. */
static sphsim_status resume_scene(scene *s, const char *path, const char *stored, const char *resolved,
                                  const char *const *extra, int n_extra, sphsim_error *e)
{
    /* its provenance names the scene file and the --set overrides the run started with: the
     * stored scene_json is the file as read, without them */
    cJSON *root = resolved ? cJSON_Parse(resolved) : NULL;
    cJSON *prov = cJSON_GetObjectItemCaseSensitive(root, "provenance");
    cJSON *file = cJSON_GetObjectItemCaseSensitive(prov, "file");
    cJSON *sets = cJSON_GetObjectItemCaseSensitive(prov, "sets");
    const char *set_v[SCENE_MAX_SETS];
    int n_sets = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, sets)
    {
        if (cJSON_IsString(it) && n_sets < SCENE_MAX_SETS) set_v[n_sets++] = it->valuestring;
    }
    const char *hint = cJSON_IsString(file) && file->valuestring[0] ? file->valuestring : path;
    sphsim_status st = scene_load_string(s, stored, hint, set_v, n_sets, e);
    if (st == SPHSIM_OK && resolved && !scene_resolved_same(resolved, s->resolved_json)) {
        scene_free(s);
        st = SPHSIM_FAIL(e, SPHSIM_E_IO,
                         "%s: the scene stored in it resolves differently with sphsim %s than when the run started "
                         "(other defaults or derived values); --resume would not continue the same run. Finish it "
                         "with the sphsim that started it, or start a new run",
                         path, SPHSIM_VERSION);
    }
    if (st == SPHSIM_OK && n_extra > 0) {
        /* --resume --set time.end=T: the stored scene with the stored overrides, the earlier
         * time.end ones replaced by this one, as if the run had started with it; only a later
         * end that keeps every other resolved value is allowed */
        const char *v2[SCENE_MAX_SETS];
        int n2 = 0;
        for (int i = 0; i < n_sets && n2 < SCENE_MAX_SETS - 1; ++i)
            if (strncmp(set_v[i], "time.end=", 9) != 0) v2[n2++] = set_v[i];
        const int n_kept = n2;
        for (int i = 0; i < n_extra && n2 < SCENE_MAX_SETS - 1; ++i) v2[n2++] = extra[i];
        scene s2;
        st = scene_load_string(&s2, stored, hint, v2, n2, e);
        if (st == SPHSIM_OK && s2.out_interval != s->out_interval && s->out_interval > 0) {
            /* the default snapshot interval (time.end / 50) follows the end: the stored run's
             * is kept, as an override before the new end */
            char interval[64];
            snprintf(interval, sizeof interval, "output.interval=%.17g", s->out_interval);
            scene_free(&s2);
            memmove(v2 + n_kept + 1, v2 + n_kept, (size_t)(n2 - n_kept) * sizeof *v2);
            v2[n_kept] = interval;
            st = scene_load_string(&s2, stored, hint, v2, n2 + 1, e);
        }
        if (st == SPHSIM_OK) {
            if (s2.t_end < s->t_end || s2.dt != s->dt || s2.steps_per_output != s->steps_per_output ||
                s2.n_total != s->n_total) {
                st = SPHSIM_FAIL(e, SPHSIM_E_USAGE,
                                 "--resume %s --set time.end=%g: time.end can only be raised (the stored run ends at "
                                 "%g s) and must leave the time step and the snapshot interval as they are",
                                 path, s2.t_end, s->t_end);
                scene_free(&s2);
            } else {
                scene_free(s);
                *s = s2;
            }
        }
        if (st != SPHSIM_OK) scene_free(s);
    }
    cJSON_Delete(root);
    return st;
}

static void default_output(const scene *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s.h5", s->name[0] ? s->name : "out");
}

/* The tuning knobs: defaults, then the SPHSIM_<KEY> environment variables, then the command
 * line's --tune KEY=VALUE options (tuning.h). The only place that reads the environment. */
static sphsim_status read_tuning(sphsim_tuning *t, const cli_args *a, sphsim_error *e)
{
    tuning_defaults(t);
    for (int i = 0; i < tuning_count(); ++i) {
        const char *name = tuning_env_name(i), *v = getenv(name);
        if (v && *v) SPHSIM_TRY(tuning_set(t, tuning_key(i), v, name, e));
    }
    for (int i = 0; i < a->n_tunes; ++i) {
        char key[64];
        const char *eq = strchr(a->tunes[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - a->tunes[i]), a->tunes[i]);
        SPHSIM_TRY(tuning_set(t, key, eq + 1, "--tune", e));
    }
    return SPHSIM_OK;
}

/* Run the scene (or resume the run) of the command line: the scene, --check's report, or the
 * simulation with its progress on stderr and its summary line on stdout. *sig: the signal that
 * stopped it; *reported: a failure is on stderr already (the summary line follows it); *alone: a
 * failure of the run that other MPI ranks may not share (they may wait for this one). */
static sphsim_status simulate(const cli_args *a, const sphsim_tuning *t, int *sig, int *reported, int *alone,
                              sphsim_error *e)
{
    scene s;
    sphsim_status st;
    if (a->resume_path) {
        char *stored = NULL, *resolved = NULL;
        st = output_read_scene(a->resume_path, &stored, &resolved, e);
        if (st == SPHSIM_OK) st = resume_scene(&s, a->resume_path, stored, resolved, a->sets, a->n_sets, e);
        free(stored);
        free(resolved);
    } else {
        st = scene_load(&s, a->scene_path, a->sets, a->n_sets, e);
    }
    if (st != SPHSIM_OK) return st;
    if (s.notes[0] && !a->quiet && comm_rank() == 0) fprintf(stderr, "sphsim: %s", s.notes);
    if (a->action == CLI_CHECK) {
        /* the grid the run would build (SPH: with neighbour lists where they may be used, whose
         * wider cells are fewer) */
        grid_params gp;
        st = sim_grid_geometry(&s, s.mode == MODE_SPH && s.neighbour_list != NLIST_OFF, &gp, e);
        if (st != SPHSIM_OK) {
            scene_free(&s);
            return st;
        }
        print_check(&s, t, a->quiet);
        scene_free(&s);
        return SPHSIM_OK;
    }

    char out[CLI_PATH_MAX + 1];
    if (a->resume_path) snprintf(out, sizeof out, "%s", a->resume_path);
    else if (a->out_path) snprintf(out, sizeof out, "%s", a->out_path);
    else default_output(&s, out, sizeof out);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    sim_options o = { 0 };
    o.out_path = out;
    o.overwrite = a->overwrite;
    o.resume_path = a->resume_path;
    o.device = a->device;
    o.progress = a->quiet ? PROGRESS_NONE : a->progress;
    o.stats = a->stats;
    o.profile = a->profile;
    /* on several MPI ranks rank 0 speaks for the run (each reports its own failure) */
    const int speaks = comm_rank() == 0;
    o.log = a->quiet || !speaks ? NULL : stderr;
    if (!speaks) o.progress = PROGRESS_NONE;
    o.stop = &stop_signal;
    o.tune = t;
    if (!a->quiet && speaks)
        fprintf(stderr, "sphsim %s: %s, %ld particles, %ld steps of %.4g s to t = %.4g s -> %s\n", SPHSIM_VERSION,
                s.name, s.n_total, s.n_steps, s.dt, s.t_end, out);

    sim_result r;
    st = sim_run(&s, &o, &r, e);
    if (st != SPHSIM_OK && st != SPHSIM_E_INTERRUPTED && stop_signal && r.steps == 0) {
        /* a signal while the run was being set up: PoCL's compiler, for one, removes its files
         * and fails the kernel build then; the signal is what the user sees */
        char msg[sizeof e->msg];
        memcpy(msg, e->msg, sizeof msg);
        st = SPHSIM_FAIL(e, SPHSIM_E_INTERRUPTED, "stopped by %s before the first step (%s)",
                         stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", msg);
        r.stop_signal = stop_signal;
    }
    if (st != SPHSIM_OK) {
        /* a usage error or a signal is every rank's alike; others may be one rank's own (a numerical
         * failure: each rank names the culprit it holds) */
        if (comm_size() > 1 && st != SPHSIM_E_USAGE && st != SPHSIM_E_INTERRUPTED)
            fprintf(stderr, "sphsim (MPI rank %d of %d): %s\n", comm_rank(), comm_size(), e->msg);
        else if (speaks) fprintf(stderr, "sphsim: %s\n", e->msg);
        *reported = 1;
        *alone = st != SPHSIM_E_USAGE && st != SPHSIM_E_INTERRUPTED && st != SPHSIM_E_NUMERIC;
    } else if (!a->quiet && speaks) {
        fprintf(stderr, "sphsim: wrote %ld snapshot(s) to %s in %.1f s on %s.\n", r.snapshots, out, r.wall_time,
                r.device_name);
        char xmf[CLI_PATH_MAX + 16];
        output_xmf_path(out, xmf, sizeof xmf);
        fprintf(stderr,
                "Open it in ParaView 5.12+ as %s (VTKHDF), in ParaView 5.11 as %s (XDMF Reader), or in "
                "Python: python3 scripts/sphsim_reader.py %s\n",
                out, xmf, out);
    }
    if (speaks) print_summary(out, &r, st, e);
    scene_free(&s);
    *sig = (int)r.stop_signal;
    return st;
}

int main(int argc, char **argv)
{
    comm_init(&argc, &argv);
    cli_args a;
    sphsim_tuning tune;
    sphsim_error e = { 0 };
    int sig = 0, reported = 0, alone = 0; /* reported: the error is on stderr already */
    sphsim_status st = cli_parse(argc, argv, &a, &e);
    if (st == SPHSIM_OK) st = read_tuning(&tune, &a, &e);
    if (st == SPHSIM_OK && !a.device) a.device = getenv("SPHSIM_DEVICE"); /* the default device selector */
    if (st == SPHSIM_E_USAGE) {
        fprintf(stderr, "sphsim: %s\nRun 'sphsim --help' for the options.\n", e.msg);
        reported = 1;
    } else if (comm_rank() != 0 && a.action != CLI_RUN) {
        /* --help, --version, --list-devices, --check on several MPI ranks: rank 0 answers */
    } else if (a.action == CLI_HELP) {
        fputs(cli_usage, stdout);
        tuning_help(stdout);
    } else if (a.action == CLI_VERSION) {
        printf("sphsim %s\n", SPHSIM_VERSION);
    } else if (a.action == CLI_LIST_DEVICES) {
        st = device_list(stdout, &e);
    } else {
        st = simulate(&a, &tune, &sig, &reported, &alone, &e);
    }
    /* on several MPI ranks, failures before the run (the command line, the scene) are every
     * rank's alike: rank 0 reports them */
    if (st != SPHSIM_OK && !reported && comm_rank() == 0) fprintf(stderr, "sphsim: %s\n", e.msg);
    /* A failure of one rank's run ends them all: the others may be waiting for it in an exchange.
     * A signal or a numerical failure is agreed by every rank (sim.c), which end together. */
    if (comm_size() > 1 && alone) {
        fflush(NULL);
        comm_abort(exit_code(st, sig));
    }
    comm_finalize();
    return exit_code(st, sig);
}
