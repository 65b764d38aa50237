"""The CUDA runtime API (libcudart.so.13) on ptxjit's driver layer."""
