/* motion: the prescribed rigid motion of the tank and the objects (scene "motion",
 * docs/scene-format.md "Motion", docs/physics.md "Moving walls"), evaluated in double at any time:
 * the displacement d(t) of the body's centre c and its turn theta(t) about a fixed axis through
 * c, with their first and second derivatives. Every segment adds what it does between its start
 * and its end to where the segments before it left the body, so a body starts at rest at t = 0
 * (d = 0, theta = 0) and its displacement is continuous in time. */
#ifndef SPHSIM_MOTION_H
#define SPHSIM_MOTION_H

#include "device.h"
#include "scene.h"
#include "../kernels/motion_shared.h"

typedef struct motion_state {
    double d[3], v[3], a[3];     /* m, m/s, m/s^2: displacement and its derivatives */
    double theta, omega, alpha;  /* rad, rad/s, rad/s^2: the turn about the body's axis */
} motion_state;

/* The state of motion m at time t (s). A body without segments rests (all zero). */
void motion_eval(const scene_motion *m, double t, motion_state *out);

/* The rotation matrix (row-major) of a turn by theta about the unit axis (Rodrigues). */
void motion_rotation(const double axis[3], double theta, double R[9]);

/* A body's placement at one time, in double: x = R (x0 - c) + c + d. */
typedef struct motion_frame {
    double R[9], c[3], d[3];
} motion_frame;
void motion_frame_at(const scene_motion *m, double t, motion_frame *f);
/* The rest position x0 of the body point at x (x0 and x may be the same array). */
void motion_frame_to_rest(const motion_frame *f, const double x[3], double x0[3]);
/* The place x of the body point at rest at x0 (x and x0 may be the same array). */
void motion_frame_place(const motion_frame *f, const double x0[3], double x[3]);

/* Body motion m at time t packed for the kernels (motion_shared.h). */
void motion_body_at(const scene_motion *m, double t, motion_body *out);

/* Whether any body of the scene moves. */
int motion_any(const scene *s);

/* The body's motion (0: the tank, 1 + i: objects[i]), or NULL past the last body. */
const scene_motion *motion_of(const scene *s, int body);

/* The box [lo, hi] widened to hold everything the box's points sweep while body m moves
 * (sampled: segment ends, table rows and 4096 points a segment, then widened by `margin` along
 * the first `dims` axes). The sweep covers every segment to its end; one without an end to the
 * end of a sine's or a turn's period or of a table, all of which a longer run repeats or holds,
 * so that the box, and the grid, do not depend on time.end (a resumed run with a later end keeps
 * them); only a constant velocity without an end is swept to t_end. */
void motion_swept_box(const scene_motion *m, int dims, double t_end, double margin, double lo[3], double hi[3]);

/* The largest speed of a point of body m within `reach` of its centre (|d'| + |theta'| reach),
 * over the times motion_swept_box samples. */
double motion_max_speed(const scene_motion *m, double reach, double t_end);

/* Bit b set: body b moves (0 the tank, 1 + i objects[i]); 0 for a scene at rest. */
unsigned motion_moving(const scene *s);

/* The bodies on the device for a step's kernels: 2 MOTION_MAX_BODIES motion_body, the bodies at
 * the step's time and at the next step's, in a buffer of their own or at a byte offset of one
 * the caller owns, written without waiting from a ring of MOTION_RING host copies (each reused
 * once its write, MOTION_RING steps before, is done). */
#define MOTION_RING 8
typedef struct motion_dev {
    ocl_device *d;
    const scene *s;
    cl_mem buf;    /* where the bodies go (owned unless `into` was given) */
    size_t offset; /* bytes into buf */
    int owned;
    motion_body ring[MOTION_RING][2 * MOTION_MAX_BODIES];
    cl_event done[MOTION_RING];
    unsigned next;
} motion_dev;

/* *out = NULL for a scene at rest. into: the caller's buffer to write at `offset` bytes (NULL: a
 * buffer of its own); MOTION_DEV_BYTES bytes there. */
#define MOTION_DEV_BYTES (2 * MOTION_MAX_BODIES * sizeof(motion_body))
sphsim_status motion_dev_create(motion_dev **out, ocl_device *d, const scene *s, cl_mem into, size_t offset,
                                sphsim_error *e);
/* Upload the bodies at step * dt and (step + 1) * dt. */
sphsim_status motion_dev_step(motion_dev *m, long step, sphsim_error *e);
void motion_dev_destroy(motion_dev *m);

#endif
