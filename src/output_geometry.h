/* output_geometry: the scene's objects under /sphsim/geometry (docs/output-format.md). */
#ifndef SPHSIM_OUTPUT_GEOMETRY_H
#define SPHSIM_OUTPUT_GEOMETRY_H

#include <hdf5.h>

#include "scene.h"

/* Write /sphsim/geometry into open file f (nothing without objects); 0, or -1 on an HDF5
 * failure. */
int output_write_geometry(hid_t f, const scene *s);
/* Bytes /sphsim/geometry takes in the file (for the output's size estimate). */
double output_geometry_bytes(const scene *s);

#endif
