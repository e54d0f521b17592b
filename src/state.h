/* state: the particle arrays on the device (structure of arrays, in grid-sorted order).
 *
 * Convention for one step (see sim.c):
 *   1. grid_build() computes keys from `pos_next` (the positions written by the last step,
 *      or the initial upload), sorts, and builds the cell table; its permutation `idx` maps
 *      sorted slot -> slot in the previous order. In a step that keeps the grid (SPH with
 *      neighbour lists, whose decision the host reads: solver.h, begin_step) steps 1 and 2 are
 *      skipped and the host swaps its handles pos <-> pos_next and vel <-> vel_next instead.
 *   2. sim gathers every per-particle array through idx: pos_next -> pos, vel_next -> vel,
 *      id -> id_tmp then swaps, and the same for type (SPH); particle mode has no _tmp arrays
 *      and no types and gathers id through pos_next (dead once gathered into pos), copying it
 *      back.
 *   3. the solver reads pos/vel (sorted) and writes pos_next/vel_next for every particle
 *      (fixed boundary particles: the same position and zero velocity; SPH writes them only in
 *      a step that re-sorted, since in a kept step the pair it writes was read the step before
 *      and holds them already). Both modes keep the mass in pos.w (set at upload, carried by
 *      every step and gather); particle mode the sphere's radius in vel.w (likewise); SPH
 *      packs more per-particle state into the spare fourth components: vel.w = rho
 *      (written by the density stage each step; -rho for walls, whose dry ones, without fluid
 *      in their lists, keep the values of the last rebuild step while the lists are kept), plus
 *      pos_p = (x, p/rho^2) (likewise).
 * So between steps the current state is in pos_next/vel_next, in the order of id/type; a
 * snapshot is read after steps 1-2 and the density stage of a step that always rebuilds, from
 * pos/vel with id/type (sim.c, enqueue_read_back). Both pairs hold
 * valid wall particles in the current order after every SPH step: nothing may use a pair as
 * scratch except in a step that re-sorts (the snapshot's pressure in vel_next is one). */
#ifndef SPHSIM_STATE_H
#define SPHSIM_STATE_H

#include "device.h"

typedef struct dev_state {
    size_t n;                  /* particles */
    cl_mem pos, vel;           /* float4, sorted order (read by solvers); pos.w = m (kg); particles: vel.w = r
                        (m); SPH: vel.w = rho
                        (kg/m^3, written by sph_density and sph_boundary; walls: -rho_w) */
    cl_mem pos_next, vel_next; /* float4, written by solvers (pos_next.w = m; particles: vel_next.w = r) */
    cl_mem pos_p;              /* float4 (SPH only, else NULL), written by the density stage, sorted:
                        (x (m), p/rho^2 (m^5/(kg s^2))), what the forces loop reads of a
                        neighbour besides vel (whose w gives its mass, sph_set_masses); with
                        neighbour lists two float4 per particle, the second a copy of
                        (v, rho) that the loops read instead of vel (sph_record_bytes) */
    cl_mem id, id_tmp;         /* uint */
    cl_mem type, type_tmp;     /* uchar (SPH only, else NULL: particle mode has spheres only) */
    cl_mem owned;              /* uchar: 1 for the particles this MPI rank owns, 0 for its halo copies, on
                                  a rank that keeps them between exchanges (SPH with lists; src/halo.h);
                                  else NULL: every particle its own */
    /* the _tmp arrays: gather scratch (NULL: sim.c gathers through pos_next; particle mode) */
    cl_mem flags; /* two uints: [0] FLAG_* bits OR-ed by kernels, [1] wall put-backs (the SPH forces stage) */
} dev_state;

#endif
