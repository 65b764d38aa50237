"""The CUDA driver API on ptxjit's runtime."""
