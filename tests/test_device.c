/* test_device: the OpenCL device layer: device choice, include expansion, builds with
 * options, build-failure messages, launches with rounded-up ranges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device.h"
#include "../kernels/shared.h"

/* The test kernels (tests/kernels/selftest.cl), which the binary does not embed; their includes
 * come from the embedded set. */
static sphsim_tuning test_tuning(void)
{
    sphsim_tuning t;
    tuning_defaults(&t);
    t.kernel_dir = "tests/kernels";
    return t;
}

static void test_open_cpu_and_axpy(void **state)
{
    (void)state;
    ocl_device d;
    sphsim_error e = { 0 };
    const sphsim_tuning tt = test_tuning();
    sphsim_status st = device_open(&d, "cpu", 0, &tt, &e);
    if (st != SPHSIM_OK) fprintf(stderr, "device_open: [%s] %s:%d\n", e.msg, e.file ? e.file : "-", e.line);
    assert_int_equal(st, SPHSIM_OK);
    assert_false(d.is_gpu);
    assert_true(d.global_mem > 0);
    cl_program prog;
    assert_int_equal(device_build(&d, "selftest.cl", "-DSELFTEST_OFFSET=3", &prog, &e), SPHSIM_OK);
    cl_kernel k;
    assert_int_equal(device_kernel(prog, "selftest_axpy", &k, &e), SPHSIM_OK);
    enum { N = 1000 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; ++i) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i;
    }
    cl_mem bx, by;
    assert_int_equal(device_alloc(&d, sizeof x, "x", &bx, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&d, sizeof y, "y", &by, &e), SPHSIM_OK);
    assert_int_equal(device_write(&d, bx, 0, sizeof x, x, &e), SPHSIM_OK);
    assert_int_equal(device_write(&d, by, 0, sizeof y, y, &e), SPHSIM_OK);
    cl_uint n = N;
    float a = 2.0f;
    /* bound by name: a name out of place, or one argument too few, fails and says which */
    const karg wrong[] = { KARG("n", n), KARG("x", bx), KARG("a", a), KARG("y", by) };
    assert_int_equal(device_set_args(&d, k, wrong, 4, &e), SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "selftest_axpy"));
    assert_non_null(strstr(e.msg, "argument 1 is 'a'"));
    assert_int_equal(device_set_args(&d, k, wrong, 3, &e), SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "takes 4 arguments, the host binds 3"));
    const karg args[] = { KARG("n", n), KARG("a", a), KARG("x", bx), KARG("y", by) };
    assert_int_equal(device_set_args(&d, k, args, 4, &e), SPHSIM_OK);
    /* 1000 is not a multiple of 64: the kernel's guard must keep the extra items out */
    assert_int_equal(device_run1d(&d, k, N, 64, &e), SPHSIM_OK);
    assert_int_equal(device_read(&d, by, 0, sizeof out, out, &e), SPHSIM_OK);
    for (int i = 0; i < N; ++i) assert_float_equal(out[i], 2.0f * i + 0.5f * i + 3.0f + PTYPE_SPHERE, 1e-3);
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    device_close(&d);
}

static void test_build_failure_has_log_and_options(void **state)
{
    (void)state;
    ocl_device d;
    sphsim_error e = { 0 };
    const sphsim_tuning tt = test_tuning();
    assert_int_equal(device_open(&d, "cpu", 0, &tt, &e), SPHSIM_OK);
    cl_program prog;
    /* SELFTEST_OFFSET undefined: the build must fail and say why */
    assert_int_equal(device_build(&d, "selftest.cl", "-DSOMETHING_ELSE=1", &prog, &e), SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "selftest.cl"));
    assert_non_null(strstr(e.msg, "-DSOMETHING_ELSE=1"));
    assert_non_null(strstr(e.msg, "SELFTEST_OFFSET"));
    device_close(&d);
}

static void test_include_expansion(void **state)
{
    (void)state;
    sphsim_error e = { 0 };
    /* embedded only: the test kernel is not in the binary */
    assert_null(device_kernel_source(NULL, "selftest.cl", &e));
    assert_non_null(strstr(e.msg, "selftest.cl"));
    /* from the folder, its include from the embedded set */
    ocl_device d = { 0 };
    d.kernel_dir = "tests/kernels";
    char *src = device_kernel_source(&d, "selftest.cl", &e);
    assert_non_null(src);
    assert_non_null(strstr(src, "#define PTYPE_SPHERE"));
    assert_null(strstr(src, "#include \"shared.h\""));
    free(src);
    assert_null(device_kernel_source(&d, "no_such_file.cl", &e));
    assert_int_equal(e.code, SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "no_such_file.cl"));
}

static void test_selectors(void **state)
{
    (void)state;
    ocl_device d;
    sphsim_error e = { 0 };
    assert_int_equal(device_open(&d, "0", 0, NULL, &e), SPHSIM_OK);
    device_close(&d);
    assert_int_equal(device_open(&d, "999", 0, NULL, &e), SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "999"));
    assert_int_equal(device_open(&d, "no-such-device-name", 0, NULL, &e), SPHSIM_E_DEVICE);
    assert_non_null(strstr(e.msg, "no-such-device-name"));
    assert_int_equal(device_open(&d, "portable COMPUTING", 0, NULL, &e), SPHSIM_OK); /* PoCL platform name, any case */
    device_close(&d);
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(cl_error_name(-5), "CL_OUT_OF_RESOURCES");
    assert_string_equal(cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    assert_string_equal(cl_error_name(-12345), "CL_UNKNOWN_ERROR(-12345)");
    assert_string_equal(sphsim_status_name(SPHSIM_E_SCENE), "invalid-scene");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_cpu_and_axpy), cmocka_unit_test(test_build_failure_has_log_and_options),
        cmocka_unit_test(test_include_expansion), cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_error_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
