/* The checks the driver-API test programs print, one line each: CHECK stops the program on a call that
   fails, expect/expect_code count a failed check and go on.  Include after cuda.h and stdio.h/stdlib.h. */
#ifndef PTXJIT_TEST_CHECKS_H
#define PTXJIT_TEST_CHECKS_H

static int failures = 0;

#define CHECK(call)                                                                    \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char *name_ = 0;                                                     \
            cuGetErrorName(r_, &name_);                                                \
            printf("FAIL %s -> %s (%d) at line %d\n", #call, name_ ? name_ : "?", r_, __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static void expect(const char *what, int ok) {
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    if (!ok) failures++;
}

static void expect_code(const char *what, CUresult got, CUresult want) {
    const char *g = 0, *w = 0;
    cuGetErrorName(got, &g);
    cuGetErrorName(want, &w);
    printf("%s %s: %s (want %s)\n", got == want ? "ok" : "FAIL", what, g ? g : "?", w ? w : "?");
    if (got != want) failures++;
}

#endif
