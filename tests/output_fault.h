/* output_fault: test-only fault injection into the output writer. Test binaries link
 * tests/output_fault.c, which defines the writer's weak hook output_fault_hook; sphsim does not. */
#ifndef SPHSIM_TEST_OUTPUT_FAULT_H
#define SPHSIM_TEST_OUTPUT_FAULT_H

/* Snapshot index (0, 1, ...) of the next output_write that fails after its data rows are
 * written, as a failed write inside HDF5 would; -1 (the default): none. */
extern long long output_fault_at;

#endif
