#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and Nsight Compute: build and profile access_patterns.cu, writing
# h100_metrics.csv (one row per launch and metric) into $1 (default: this folder).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-.}
nvcc -O3 -arch=sm_90 -rdc=true access_patterns.cu run_ncu.cu -o /tmp/ncu_patterns
ncu --csv --metrics \
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,\
smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,\
smsp__sass_branch_targets.sum,smsp__sass_branch_targets_threads_divergent.sum,smsp__sass_branch_targets_threads_uniform.sum,\
smsp__thread_inst_executed_per_inst_executed.ratio \
  /tmp/ncu_patterns | grep '^"' > "$out/h100_metrics.csv"
