/* motion: the prescribed rigid motion of the tank and the objects (scene "motion",
 * docs/scene-format.md "Motion", docs/physics.md "Moving walls"), evaluated in double at any time:
 * the displacement d(t) of the body's centre c and its turn theta(t) about a fixed axis through
 * c, with their first and second derivatives. Every segment adds what it does between its start
 * and its end to where the segments before it left the body, so a body starts at rest at t = 0
 * (d = 0, theta = 0) and its displacement is continuous in time. */
#ifndef SPHSIM_MOTION_H
#define SPHSIM_MOTION_H

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

#endif
