/* contact: host side of the hard-sphere collision solver (particle mode): impulses with
 * restitution and Coulomb friction, rotation, contact normals at the time of impact.
 * One step, on the state gathered into sorted order after the grid was rebuilt on it
 * (docs/contacts.md has the equations and the reasons):
 *   contact_list      : the contacts at the start of the step (walls, and spheres touching in
 *                       st->pos), each with the impulse it carried from the last step (warm start;
 *                       needs the grid's permutation and st->id)
 *   contact_warm      : those impulses applied to the velocities and angular velocities
 *   contact_resolve   : `iterations` Jacobi passes over the impulses: each contact, with the
 *                       normal of its time of touch, drives its normal velocity to the target
 *                       (impact: bounce with restitution e; resting: stop) and its contact point's
 *                       tangential velocity to zero within the Coulomb cone
 *   contact_spin      : the angular velocities of the last pass stored (by id)
 *   contact_displace  : positions moved along the corrected paths since each contact's touch
 *   contact_project   : `iterations` Jacobi passes removing the remaining overlaps
 *   contact_integrate : v += g dt; x += v dt -> pos_next, vel_next.
 * Contacts are thus resolved on exactly the positions the grid was built on (the drifted state
 * of the previous step), as the seed's "rebuild the grid, then resolve". No float atomics;
 * results do not depend on thread order. The solver keeps per sphere, by particle id, the
 * angular velocity and the contact slots; pos_next and vel_next serve as scratch during a step
 * and a snapshot (they hold nothing the next step reads until the step writes them), and so does
 * the grid's scratch (grid_scratch: the sort's buffers, dead once contact_list has read the
 * permutation) in contact_step: the impulse passes' iterates and the position passes' live in
 * these three (docs/contacts.md, "Memory"). */
#ifndef SPHSIM_CONTACT_H
#define SPHSIM_CONTACT_H

#include "grid.h"
#include "particles.h"
#include "scene.h"
#include "solver.h"
#include "state.h"
#include "tuning.h"
#include "../kernels/contact_shared.h"

typedef struct contact_solver contact_solver;

/* Fill the kernel-side parameters from a resolved scene. */
void contact_params_from_scene(const scene *s, contact_params *p);
/* The material tables of a scene with G = max(1, n_groups) groups: group_start[G] (each group's
 * first sphere id) and material[2 (G+1)^2] ((e, mu) of groups a, b at 2 (a (G+1) + b); b = G:
 * the walls). */
void contact_materials(const scene *s, uint32_t *group_start, float *material);

/* t: the tuning (contact_ahead); NULL: the defaults. */
sphsim_status contact_create(contact_solver **out, ocl_device *d, const scene *s, const sphsim_tuning *t,
                             sphsim_error *e);
void contact_destroy(contact_solver *c);

/* Enqueue one step on `st` (sorted) using grid `g`. Never blocks the host. Fails
 * (SPHSIM_E_SCENE) when the grid's search radius is below 2 * the largest sphere radius. The
 * step uses the grid's scratch: grid_index() and grid_keys() hold nothing afterwards until the
 * next grid_build (contact_state_save takes the index before the step). */
sphsim_status contact_step(contact_solver *c, grid *g, dev_state *st, sphsim_error *e);

/* Number of touching pairs (distance < r_i + r_j) in st->pos, the sorted positions the grid
 * was last built on (in sim.c: the state just written as a snapshot); blocks. Uses st->pos_next
 * as scratch. */
sphsim_status contact_count(contact_solver *c, grid *g, dev_state *st, long *n_contacts, sphsim_error *e);

/* count[i] (st->n of them): the touching partners j > i (sorted index) of sorted sphere i, after
 * a grid build on st->pos; summed, contact_count's total (blocks). On MPI ranks, whose cells
 * are sorted alike, the sum over the spheres each owns counts every pair once. */
sphsim_status contact_count_each(contact_solver *c, grid *g, dev_state *st, uint32_t *count, sphsim_error *e);

/* Device bytes the solver allocates for n particles in a run (slots, angular velocities,
 * contact counts; its scratch is the grid's, contact_step), the geometry cache left out. */
size_t contact_bytes(const scene *s, size_t n);

/* The geometry cache (docs/contacts.md, "Geometry cache"): whether a run of scene s on device d
 * takes it (tuning's contact_cache; auto: on CPUs while it takes at most a quarter of the
 * device's memory, off on GPUs), and the device bytes it takes for n spheres. */
int contact_cache_on(const ocl_device *d, const scene *s, const sphsim_tuning *t);
size_t contact_cache_bytes(const scene *s, size_t n);

/* Device ids numbered locally (MPI ranks: 0 .. n - 1 in ascending particle id, gid[k] the
 * particle id of device id k): the groups' first device ids for the kernels, which take a
 * sphere's group, and so its materials, from its id. Blocks. */
sphsim_status contact_set_ids(contact_solver *c, const uint32_t *gid, size_t n, sphsim_error *e);

/* Angular velocities (rad/s) of st's spheres in st's sorted order into `out` (n * 3 floats;
 * 2D: 0, 0, w_z); enqueued. contact_set_angular_velocity: set them from `omega` (3 floats per
 * particle id; 2D takes the third); blocks. */
sphsim_status contact_angular_velocity(contact_solver *c, dev_state *st, cl_mem out, sphsim_error *e);
sphsim_status contact_set_angular_velocity(contact_solver *c, dev_state *st, const float *omega, sphsim_error *e);

/* ---- the same with an explicit cell table (tests, and any caller with its own grid) ----
 * cell_start / cell_end: uint per cell (index cx + nx*(cy + ny*cz)) into the sorted arrays,
 * built on st->pos; gp_buf: a grid_params (__constant) with radius >= 2 * max sphere radius;
 * idx: uint per particle, sorted slot -> slot in the order the last contact_enqueue wrote
 * (pos_next), or NULL: that order stands (grid_build_keep kept it). Impulses are carried
 * from the last step unless none was enqueued since the state was set (contact_forget).
 * st needs pos (with each sphere's mass in pos.w), vel (with its radius in vel.w), pos_next,
 * vel_next and id (flags may be NULL); the step carries pos.w and vel.w into pos_next and
 * vel_next. The solver
 * allocates its own scratch (16 B per sphere) for this. */
sphsim_status contact_enqueue(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, cl_mem idx,
                              dev_state *st, sphsim_error *e);

/* Drop the impulses carried to the next step (e.g. after the state was replaced). */
void contact_forget(contact_solver *c);

/* The size of contact_state_save's blob for n particles in `dims` dimensions. */
size_t contact_state_size(int dims, size_t n);
/* Host bytes the save and the restore move the slots through (one block of spheres' slots). */
size_t contact_save_chunk_bytes(int dims);

/* ---- the carried state, for --resume (docs/reliability.md) ----
 * What the next contact step reads from the last one (the angular velocities, each contact's
 * partner id and accumulated impulses, per particle, and whether there are any) as an opaque
 * blob: a small header (version, n, slots, dimensions; see contact.c), then the angular
 * velocities and the slots of particle id 0, 1, ..., so it does not depend on the device order.
 * Its size depends on n and the dimensions only.
 *
 * contact_state_save: malloc'd blob (free it) of what the next contact_step / contact_enqueue
 * on `st` will read. `idx`: the permutation that step will get (sorted slot -> slot in the
 * order the last step wrote: grid_index() after grid_build, as in sim.c at a snapshot), with
 * st->id already gathered into the sorted order; NULL: no rebuild since the last step (st->id
 * is still in the order the last step wrote). Blocks.
 *
 * contact_state_restore: make the next step read `blob`, on a state uploaded into any order
 * (st->id on the device names each slot's particle) and not rebuilt since; the next step's
 * `idx` maps its sorted order back to that order (sim.c: restore after state_upload, before
 * the first grid_build). The step is then bit-identical to the one that followed the save.
 * A blob of another format version, slot count or dimension starts cold (SPHSIM_OK, nothing
 * carried, no rotation);
 * a damaged one, or one for another particle count, fails (SPHSIM_E_IO). Blocks. */
sphsim_status contact_state_save(contact_solver *c, cl_mem idx, dev_state *st, void **blob, size_t *bytes,
                                 sphsim_error *e);
sphsim_status contact_state_restore(contact_solver *c, dev_state *st, const void *blob, size_t bytes, sphsim_error *e);

/* The carried state per sphere, for the MPI exchange (docs/mpi.md): row k of a blob of n
 * particles is particle k's angular velocity (1 or 3 floats) and its slots (3 words each), with
 * a sphere partner named by gid[partner] instead of its index in the blob (gid NULL: as is).
 * contact_state_rows: the rows of `blob` (which must hold n particles) into rows[n *
 * contact_row_words], and *warm (0: it carries no impulses); a blob of another format starts
 * cold, as contact_state_restore does. contact_state_join: the blob of n particles whose ids are
 * gid[0..n-1] (ascending; NULL: 0 .. n-1) from such rows; a slot whose partner is not among them
 * is left empty. */
size_t contact_row_words(const contact_solver *c);
sphsim_status contact_state_rows(const contact_solver *c, const void *blob, size_t bytes, size_t n, const uint32_t *gid,
                                 uint32_t *rows, int *warm, sphsim_error *e);
sphsim_status contact_state_join(const contact_solver *c, const uint32_t *rows, size_t n, const uint32_t *gid, int warm,
                                 void **blob, size_t *bytes, sphsim_error *e);
/* One rank's share of the blob of a run of n_ids spheres (partners by particle id), for a
 * collective write (output_write_shares): its k rows (contact_state_rows' form, partners by
 * particle id) of the spheres ids[0..k-1] (ascending), and the header too when `root`, as runs
 * of the blob's bytes (offset, length; ascending) in *run and their bytes in *data, in that
 * order; *total: the blob's size. Over the ranks every sphere once, these are the bytes
 * contact_state_join gives for the whole run. */
sphsim_status contact_state_runs(const contact_solver *c, const uint32_t *rows, const uint32_t *ids, size_t k,
                                 size_t n_ids, int warm, int root, void **data, uint64_t **run, size_t *n_runs,
                                 size_t *total, sphsim_error *e);
sphsim_status contact_count_cells(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                  long *n_contacts, sphsim_error *e);

/* Touching pairs of st->pos listed per particle (blocks): count[i] is the number of partners
 * j > i (sorted index) of sorted particle i; partner[i * max_per + k], k < min(count[i],
 * max_per), are their sorted indices in the order the cell block is scanned. Fails (SPHSIM_E_DEVICE) when a particle has
 * more than max_per partners. Host arrays hold st->n and st->n * max_per entries. */
sphsim_status contact_list_pairs(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                 unsigned max_per, uint32_t *count, uint32_t *partner, sphsim_error *e);

/* The contact solver of a run (contact_create) behind the time loop's interface (solver.h). */
sphsim_status contact_solver_open(solver *out, ocl_device *d, const scene *s, const sphsim_tuning *t,
                                  sphsim_error *e);

#endif
