#!/usr/bin/env bash
# Regenerate the fatbin reader's test images (needs nvcc 13 and binutils; the tests never run them).
set -euo pipefail
cd "$(dirname "$0")"
O="-O3"
# PTX for compute_80 and compute_90, SASS for sm_90: what a typical release build embeds.
G="-gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90 -gencode arch=compute_90,code=sm_90"

# The references: the PTX nvcc writes for each virtual arch, the SASS-only cubin for sm_90.
nvcc -ptx $O -arch=compute_80 kernels.cu -o kernels.compute_80.ptx
nvcc -ptx $O -arch=compute_90 kernels.cu -o kernels.compute_90.ptx
nvcc -cubin $O -gencode arch=compute_90,code=sm_90 kernels.cu -o kernels.sm_90.cubin
# Relocatable: the out-of-line device function gets its own .text section, and is still no kernel.
nvcc -cubin -rdc=true $O -gencode arch=compute_90,code=sm_90 kernels.cu -o kernels.sm_90.rdc.cubin

# One fatbin per compression mode (default/balance: zstd PTX; size: zstd PTX and SASS; speed: LZ4 PTX; none).
for mode in default balance size speed none; do
    nvcc -fatbin $O $G --compress-mode=$mode kernels.cu -o kernels.$mode.fatbin
done
# Every image compressed, LZ4 (the SASS too).
nvcc -fatbin $O $G --compress-mode=speed -Xfatbin -compress-all kernels.cu -o kernels.speed_all.fatbin
# Debug build: the debug flag, the source file name as identifier, the ptxas options nvcc passes with -G.
nvcc -fatbin -G -gencode arch=compute_90,code=compute_90 -gencode arch=compute_90,code=sm_90 kernels.cu \
    -o kernels.debug.fatbin
# Options recorded from -Xptxas.
nvcc -fatbin $O -Xptxas -O1 -gencode arch=compute_90,code=compute_90 kernels.cu -o kernels.xptxas.fatbin
# SASS only: the image ptxjit must refuse.
nvcc -fatbin $O -gencode arch=compute_90,code=sm_90 kernels.cu -o kernels.sass_only.fatbin
# PTX only, with arch- and family-specific targets, for choosing the PTX a device JIT-compiles.
nvcc -fatbin $O -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90 \
    -gencode arch=compute_90a,code=compute_90a -gencode arch=compute_100f,code=compute_100f \
    -gencode arch=compute_120,code=compute_120 kernels.cu -o kernels.targets.fatbin

# Host executables (dynamic cudart keeps them small), stripped, and the .nv_fatbin section binutils extracts.
nvcc $O -cudart shared $G host_main.cu -o host.exe
strip host.exe
objcopy -O binary --only-section=.nv_fatbin host.exe host.nv_fatbin.bin
nvcc $O -cudart shared -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90 \
    host_main.cu fill.cu -o host2.exe
strip host2.exe
objcopy -O binary --only-section=.nv_fatbin host2.exe host2.nv_fatbin.bin

# What NVRTC hands a program: NUL-terminated PTX and a SASS-only cubin (the nvidia-cuda-nvrtc wheel in .venv).
NVRTC=${NVRTC:-$(ls ../../../.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 | head -1)}
../../../.venv/bin/python nvrtc_images.py "$NVRTC"
