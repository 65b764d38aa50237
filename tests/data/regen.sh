#!/usr/bin/env bash
# Regenerate the PTX used by the error/API tests (needs nvcc).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -ptx -arch=sm_80 -lineinfo -O3 errors.cu -o errors.ptx
nvcc -ptx -arch=sm_80 -O3 mangled.cu -o mangled.ptx
nvcc -ptx -arch=sm_80 -O3 noinline_sync.cu -o noinline_sync.ptx
nvcc -ptx -arch=sm_80 -O3 lockstep.cu -o lockstep.ptx
nvcc -ptx -arch=sm_80 -O3 legacy_warp_reduce.cu -o legacy_warp_reduce.ptx
nvcc -ptx -arch=sm_90 -O3 warp_converge.cu -o warp_converge.ptx
nvcc -ptx -arch=sm_80 -O3 printf_bad.cu -o printf_bad.ptx
nvcc -ptx -arch=sm_80 -O3 launch_checks.cu -o launch_checks.ptx
nvcc -ptx -arch=sm_80 -O3 interrupts.cu -o interrupts.ptx
nvcc -ptx -arch=sm_80 -O3 barrier_forms.cu -o barrier_forms.ptx
nvcc -ptx -arch=sm_80 -lineinfo -O3 memory_safety.cu -o memory_safety.ptx
nvcc -ptx -arch=sm_80 -lineinfo -O3 counted_loops.cu -o counted_loops.ptx
nvcc -ptx -arch=sm_80 -O3 trace_independence.cu -o trace_independence.ptx
nvcc -ptx -arch=sm_80 -O3 tiers_branchy.cu -o tiers_branchy.ptx
nvcc -ptx -arch=sm_80 -O3 shfl_chains.cu -o shfl_chains.ptx
nvcc -ptx -arch=sm_80 -O3 unroll.cu -o unroll.ptx
nvcc -ptx -arch=sm_80 -lineinfo -O3 tiers_patterns.cu -o tiers_patterns.ptx
nvcc -ptx -arch=sm_80 -O3 shared_ranges.cu -o shared_ranges.ptx
nvcc -ptx -arch=sm_80 -O3 tiers_nomem.cu -o tiers_nomem.ptx
nvcc -ptx -arch=sm_80 -O3 midbody_decls.cu -o midbody_decls.ptx
nvcc -ptx -arch=sm_90 -O3 special_registers.cu -o special_registers.ptx
nvcc -ptx -arch=sm_80 -O3 generic_shared.cu -o generic_shared.ptx
nvcc -ptx -arch=sm_80 -lineinfo -O3 median_filter.cu -o median_filter.ptx
nvcc -ptx -arch=sm_80 -G median_filter.cu -o median_filter_G.ptx
