/* output_fault: defines the output writer's test hook (src/output.c declares it weak, so that
 * only the test binaries, which link this file, can inject a failure). */
#include "output_fault.h"

long long output_fault_at = -1;

int output_fault_hook(unsigned long long k, int before_rows);

int output_fault_hook(unsigned long long k, int before_rows)
{
    return !before_rows && output_fault_at >= 0 && (unsigned long long)output_fault_at == k;
}
