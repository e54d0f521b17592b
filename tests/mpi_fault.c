/* mpi_fault: the output writer's test hook for build-mpi/sphsim-fault, the MPI build of sphsim
 * that tests/python/test_mpi.py makes fail a snapshot on one rank. SPHSIM_TEST_FAULT=RANK:K
 * makes snapshot K fail on MPI rank RANK before that rank writes any of its rows, as a failure
 * of that rank alone would (src/output.c, output_fault_hook); unset, nothing fails. */
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"

int output_fault_hook(unsigned long long k, int before_rows);

int output_fault_hook(unsigned long long k, int before_rows)
{
    const char *v = getenv("SPHSIM_TEST_FAULT");
    int rank;
    unsigned long long at;
    if (!v || sscanf(v, "%d:%llu", &rank, &at) != 2) return 0;
    return before_rows && rank == comm_rank() && at == k;
}
