#!/usr/bin/env bash
# Rebuild the runtime-API test programs (needs nvcc; tests never run this).  They are built as any CUDA
# program is for ptxjit: against the shared CUDA runtime (-cudart shared), with PTX embedded
# (code=compute_90) beside the SASS.  At run time they need only a libcudart.so.13 on the library path
# (ptxjit exec puts ptxjit's there).  Two are built otherwise on purpose: vector_add_static with nvcc's
# default static runtime (ptxjit refuses it with a rebuild hint) and no_ptx with SASS only.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
LIB=$("$ROOT/.venv/bin/python" -c "from ptxjit.driver.build import ensure_built; print(ensure_built().parent)")
ARCH=(-gencode arch=compute_90,code=compute_90 -gencode arch=compute_90,code=sm_90)
for p in vector_add matmul_tiled reduce constant_symbol streams_events device_props api_misc api_samples managed_var grid_sync \
         host_threads scan histogram transpose bitonic_sort nbody black_scholes graphs textures smem_optin; do
    nvcc -O2 -cudart shared "${ARCH[@]}" "$p.cu" -o "$p"
done
nvcc -O2 -lineinfo -cudart shared "${ARCH[@]}" oob_write.cu -o oob_write  # the fault report names the source line
nvcc -O2 -cudart shared "${ARCH[@]}" printf_assert.cu -o printf_assert  # run with an argument: printf or assert
nvcc -O2 -cudart shared "${ARCH[@]}" driver_and_runtime.cu -o driver_and_runtime -L"$LIB" -lcuda
nvcc -O2 -cudart shared -gencode arch=compute_90,code=sm_90 no_ptx.cu -o no_ptx
nvcc -O2 "${ARCH[@]}" vector_add.cu -o vector_add_static
strip vector_add_static
nvcc -O2 -cudart shared --default-stream per-thread "${ARCH[@]}" streams_events.cu -o streams_events_ptds
nvcc -O2 -rdc=true -cudart shared "${ARCH[@]}" rdc_main.cu rdc_lib.cu -o rdc_main
