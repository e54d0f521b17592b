/* motion_shared.h: the prescribed rigid motion of the tank and the objects (scene "motion",
 * docs/scene-format.md) as the kernels see it at one time, shared by host and kernels. Body 0 is
 * the tank (its box walls), body 1 + i the scene's objects[i]. src/motion.c evaluates a body's
 * motion in double and packs it here in float: a point whose rest position is x0 is at
 *   x = R (x0 - c) + c + d,
 * moving with v = d' + omega x (x - c - d) and accelerating with
 *   a = d'' + alpha x r + omega x (omega x r),   r = x - c - d.
 * Only 4-byte scalars, so the layout is the same on both sides. */
#ifndef SPHSIM_MOTION_SHARED_H
#define SPHSIM_MOTION_SHARED_H

#include "geom_shared.h"

#define MOTION_MAX_BODIES (GEOM_MAX_OBJECTS + 1) /* the tank and every object */

typedef struct motion_body {
    float rot[9];   /* R(t), row-major */
    float pivot[3]; /* m: c, the rotation's centre at rest */
    float disp[3];  /* m: d(t), the displacement of c */
    float vel[3];   /* m/s: d'(t) */
    float omega[3]; /* rad/s: the angular velocity vector */
    float acc[3];   /* m/s^2: d''(t) */
    float alpha[3]; /* rad/s^2: the angular acceleration vector */
    float pad;
} motion_body;

#endif
