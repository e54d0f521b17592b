/* status: the error type every module returns; modules fill it, never print. */
#ifndef SPHSIM_STATUS_H
#define SPHSIM_STATUS_H

#include <stddef.h>

/* Stable status codes. main.c maps each to the documented exit code. */
typedef enum sph_status {
    SPH_OK = 0,
    SPH_E_USAGE,       /* bad command line                      -> exit 2 */
    SPH_E_SCENE,       /* invalid scene                         -> exit 3 */
    SPH_E_IO,          /* file could not be read or written     -> exit 4 */
    SPH_E_DEVICE,      /* OpenCL platform/device/build/run      -> exit 5 */
    SPH_E_NUMERIC,     /* NaN, Inf, runaway velocity            -> exit 6 */
    SPH_E_INTERRUPTED, /* SIGINT / SIGTERM (exit 130 / 143)            */
    SPH_E_NOMEM        /* host allocation failed                -> exit 4 */
} sph_status;

/* Where and why an operation failed. `msg` is a complete human sentence. */
typedef struct sph_error {
    sph_status code;
    char msg[2048];
    const char *file;
    int line;
} sph_error;

/* Fill `e` (may be NULL) and return `code`. printf-style message. */
sph_status sph_fail(sph_error *e, sph_status code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define SPH_FAIL(e, code, ...) sph_fail((e), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Short stable name of a status ("invalid-scene", ...). */
const char *sph_status_name(sph_status s);

/* Name of an OpenCL error number ("CL_OUT_OF_RESOURCES"), or "CL_UNKNOWN_ERROR(n)". */
const char *sph_cl_error_name(int cl_err);

/* Return on failure of a call that returns cl_int. */
#define CL_CHECK(e, call)                                                                          \
    do {                                                                                           \
        cl_int cl_check_err_ = (call);                                                             \
        if (cl_check_err_ != CL_SUCCESS)                                                           \
            return SPH_FAIL((e), SPH_E_DEVICE, "OpenCL call %s failed: %s", #call,                 \
                            sph_cl_error_name(cl_check_err_));                                     \
    } while (0)

/* Return on failure of a call that reported through its `&err` argument. */
#define CL_CHECK_ERR(e, err, what)                                                                 \
    do {                                                                                           \
        if ((err) != CL_SUCCESS)                                                                   \
            return SPH_FAIL((e), SPH_E_DEVICE, "OpenCL call %s failed: %s", (what),                \
                            sph_cl_error_name(err));                                               \
    } while (0)

/* Propagate a non-OK status. */
#define SPH_TRY(expr)                                                                              \
    do {                                                                                           \
        sph_status sph_try_st_ = (expr);                                                           \
        if (sph_try_st_ != SPH_OK) return sph_try_st_;                                             \
    } while (0)

#endif
