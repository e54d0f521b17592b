/* particles: allocation of the host structure-of-arrays. */
#include "particles.h"

#include <stdlib.h>
#include <string.h>

sph_status particles_alloc(particles *p, size_t n, sph_error *e)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    size_t m = n ? n : 1;
    p->pos = calloc(4 * m, sizeof *p->pos);
    p->vel = calloc(4 * m, sizeof *p->vel);
    p->rho = calloc(m, sizeof *p->rho);
    p->pressure = calloc(m, sizeof *p->pressure);
    p->mass = calloc(m, sizeof *p->mass);
    p->radius = calloc(m, sizeof *p->radius);
    p->id = calloc(m, sizeof *p->id);
    p->type = calloc(m, sizeof *p->type);
    if (!p->pos || !p->vel || !p->rho || !p->pressure || !p->mass || !p->radius || !p->id || !p->type) {
        particles_free(p);
        return SPH_FAIL(e, SPH_E_NOMEM, "out of host memory allocating %zu particles", n);
    }
    return SPH_OK;
}

void particles_free(particles *p)
{
    free(p->pos);
    free(p->vel);
    free(p->rho);
    free(p->pressure);
    free(p->mass);
    free(p->radius);
    free(p->id);
    free(p->type);
    memset(p, 0, sizeof *p);
}

sph_status particles_scatter_by_id(const particles *q, particles *p, sph_error *e)
{
    const size_t n = q->n;
    for (size_t i = 0; i < n; ++i) {
        uint32_t k = q->id[i];
        if (k >= n) return SPH_FAIL(e, SPH_E_DEVICE, "device returned particle id %u of %zu: state corrupted", k, n);
        memcpy(&p->pos[4 * k], &q->pos[4 * i], 16);
        memcpy(&p->vel[4 * k], &q->vel[4 * i], 16);
        p->id[k] = k;
        p->type[k] = q->type[i];
        p->mass[k] = q->mass[i];
        p->rho[k] = q->rho[i];
        p->pressure[k] = q->pressure[i];
        p->radius[k] = q->radius[i];
    }
    return SPH_OK;
}
