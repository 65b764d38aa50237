// Shared by the runtime-API test programs: a CUDA call that fails ends the program with status 1.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            std::printf("%s: FAIL %s returned %s (%d): %s\n", PROGRAM, #call,                \
                        cudaGetErrorName(err_), (int)err_, cudaGetErrorString(err_));        \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)
