/* status: the error type every module returns; modules fill it, never print. */
#ifndef SPHSIM_STATUS_H
#define SPHSIM_STATUS_H

#include <stddef.h>

/* Stable status codes. main.c maps each to the documented exit code. */
typedef enum sphsim_status {
    SPHSIM_OK = 0,
    SPHSIM_E_USAGE,       /* bad command line                      -> exit 2 */
    SPHSIM_E_SCENE,       /* invalid scene                         -> exit 3 */
    SPHSIM_E_IO,          /* file could not be read or written     -> exit 4 */
    SPHSIM_E_DEVICE,      /* OpenCL platform/device/build/run      -> exit 5 */
    SPHSIM_E_NUMERIC,     /* NaN, Inf, runaway velocity            -> exit 6 */
    SPHSIM_E_INTERRUPTED, /* SIGINT / SIGTERM (exit 130 / 143)            */
    SPHSIM_E_NOMEM        /* host allocation failed                -> exit 4 */
} sphsim_status;

/* Where and why an operation failed. `msg` is a complete human sentence. */
typedef struct sphsim_error {
    sphsim_status code;
    char msg[2048];
    const char *file;
    int line;
} sphsim_error;

/* Fill `e` (may be NULL) and return `code`. printf-style message. */
sphsim_status sphsim_fail(sphsim_error *e, sphsim_status code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define SPHSIM_FAIL(e, code, ...) sphsim_fail((e), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Short stable name of a status ("invalid-scene", ...). */
const char *sphsim_status_name(sphsim_status s);

/* Name of an OpenCL error number ("CL_OUT_OF_RESOURCES"), or "CL_UNKNOWN_ERROR(n)". */
const char *cl_error_name(int cl_err);

/* Return on failure of a call that returns cl_int. */
#define CL_CHECK(e, call)                                                                                              \
    do {                                                                                                               \
        cl_int cl_check_err_ = (call);                                                                                 \
        if (cl_check_err_ != CL_SUCCESS)                                                                               \
            return SPHSIM_FAIL((e), SPHSIM_E_DEVICE, "OpenCL call %s failed: %s", #call,                               \
                               cl_error_name(cl_check_err_));                                                          \
    } while (0)

/* Return on failure of a call that reported through its `&err` argument. */
#define CL_CHECK_ERR(e, err, what)                                                                                     \
    do {                                                                                                               \
        if ((err) != CL_SUCCESS)                                                                                       \
            return SPHSIM_FAIL((e), SPHSIM_E_DEVICE, "OpenCL call %s failed: %s", (what), cl_error_name(err));         \
    } while (0)

/* Propagate a non-OK status. */
#define SPHSIM_TRY(expr)                                                                                               \
    do {                                                                                                               \
        sphsim_status sphsim_try_st_ = (expr);                                                                         \
        if (sphsim_try_st_ != SPHSIM_OK) return sphsim_try_st_;                                                        \
    } while (0)

#endif
