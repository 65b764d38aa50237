"""Every special register ptxas (CUDA 13.0, sm_90) accepts: loading (the mov/cvt forms ptxas takes and
refuses), and the values read against what the PTX ISA (§10) says of each.

References: ptxas's acceptance (recorded in SREG_FORMS; PTXJIT_TEST_PTXAS=1 re-checks it when ptxas is on
PATH), the launch's own parameters, the host's wall clock, NumPy, and CUDA's documented constants
(cudaDevAttrReservedSharedMemoryPerBlock = 1 KB on sm_80/sm_90; cooperative groups' 288-byte scratch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import PTXValidationError
from tests.markers import slow

DATA = Path(__file__).parent / "data"

FORMS = ("mov.u16", "mov.b32", "mov.u64", "mov.pred", "cvt.u32.u16", "cvt.u64.u32", "cvt.u32.u64")
# the forms of FORMS that ptxas -arch=sm_90 (CUDA 13.0 V13.0.88, .version 9.0) assembles, per register
SREG_FORMS = {
    "%tid.x": "mov.u16 mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%ntid.y": "mov.u16 mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%ctaid.z": "mov.u16 mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%nctaid.w": "mov.u16 mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%laneid": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%warpid": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%nwarpid": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%smid": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%nsmid": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%gridid": "mov.u16 mov.b32 mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%clock": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%clock_hi": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%clock64": "mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%globaltimer": "mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%globaltimer_lo": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%globaltimer_hi": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%lanemask_eq": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%lanemask_le": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%lanemask_lt": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%lanemask_ge": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%lanemask_gt": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%pm0": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%pm7": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%pm0_64": "mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%pm7_64": "mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%envreg0": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%envreg31": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%total_smem_size": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%dynamic_smem_size": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%aggr_smem_size": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%reserved_smem_offset_begin": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%reserved_smem_offset_end": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%reserved_smem_offset_cap": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%reserved_smem_offset_0": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%reserved_smem_offset_1": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%current_graph_exec": "mov.u64 cvt.u32.u16 cvt.u64.u32 cvt.u32.u64",
    "%clusterid.x": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%nclusterid.y": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%cluster_ctaid.z": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%cluster_nctaid.x": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%cluster_ctarank": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%cluster_nctarank": "mov.b32 cvt.u32.u16 cvt.u64.u32",
    "%is_explicit_cluster": "mov.pred",
    # names ptxas does not know
    "%envreg32": "", "%reserved_smem_offset_2": "", "%pm8": "", "%warpsize": "", "%laneid.x": "", "%tid": "",
}


def _slew_ns() -> int:
    """How far the host's wall clock has moved against CLOCK_MONOTONIC since ptxjit took the epoch's
    distance from it (a clock being slewed by NTP runs up to 0.5% apart): %globaltimer follows the
    monotonic clock, so a comparison with time.time_ns() allows that much."""
    from ptxjit.runtime.globaltimer import epoch_offset

    return abs(time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC) - epoch_offset())



def one_read(form: str, reg: str) -> str:
    t = form.split(".")[1]
    return (".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
            f"    .reg .{t} %r<2>;\n    {form} %r0, {reg};\n    ret;\n}}\n")


def ptxas_accepts(text: str) -> bool:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(text)
    try:
        return subprocess.run(["ptxas", "-arch=sm_90", fh.name, "-o", os.devnull], capture_output=True).returncode == 0
    finally:
        os.unlink(fh.name)


@pytest.mark.parametrize("reg", sorted(SREG_FORMS))
def test_forms_ptxas_takes_load_and_the_others_are_refused(reg):
    accepted = set(SREG_FORMS[reg].split())
    recheck = os.environ.get("PTXJIT_TEST_PTXAS") == "1" and shutil.which("ptxas") is not None
    for form in FORMS:
        text = one_read(form, reg)
        if recheck:
            assert ptxas_accepts(text) == (form in accepted), (form, reg)
        if form in accepted:
            ptxjit.Module(text).get_function("k")
        else:
            with pytest.raises(PTXValidationError) as e:
                ptxjit.Module(text).get_function("k")
            assert ":7:" in str(e.value) and reg.split(".")[0] in str(e.value), str(e.value)  # line, register


READS = """.version 8.1
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u64 times)
{
    .reg .pred %p<2>;
    .reg .b16 %h<2>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<20>;
    .shared .align 4 .b8 user[100];
    mov.u32 %r0, %dynamic_smem_size;
    mov.u32 %r1, %total_smem_size;
    mov.u32 %r2, %aggr_smem_size;
    mov.u32 %r3, %reserved_smem_offset_begin;
    mov.u32 %r4, %reserved_smem_offset_end;
    mov.u32 %r5, %reserved_smem_offset_cap;
    mov.u32 %r6, %reserved_smem_offset_0;
    mov.u32 %r7, %reserved_smem_offset_1;
    mov.u32 %r8, user;
    mov.u32 %r9, dyn;
    mov.u32 %r10, %globaltimer_lo;
    mov.u32 %r11, %globaltimer_hi;
    cvt.u32.u64 %r12, %gridid;
    mov.u32 %r13, %gridid;
    mov.u16 %h0, %tid.x;
    cvt.u32.u16 %r14, %h0;
    mov.u32 %r15, %tid.x;
    mov.u32 %r16, %envreg0;
    mov.u32 %r17, %envreg31;
    mov.u32 %r18, %pm0;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r15, 80;
    add.s64 %rd2, %rd0, %rd1;
    st.global.v4.u32 [%rd2], {%r0, %r1, %r2, %r3};
    st.global.v4.u32 [%rd2+16], {%r4, %r5, %r6, %r7};
    st.global.v4.u32 [%rd2+32], {%r8, %r9, %r10, %r11};
    st.global.v4.u32 [%rd2+48], {%r12, %r13, %r14, %r15};
    st.global.v2.u32 [%rd2+64], {%r16, %r17};
    mov.u64 %rd3, %globaltimer;
    mov.u64 %rd4, %current_graph_exec;
    mov.u64 %rd5, %gridid;
    mov.u64 %rd6, %globaltimer;
    ld.param.u64 %rd7, [times];
    mul.wide.u32 %rd8, %r15, 32;
    add.s64 %rd9, %rd7, %rd8;
    st.global.v2.u64 [%rd9], {%rd3, %rd4};
    st.global.v2.u64 [%rd9+16], {%rd5, %rd6};
    ret;
}
"""


@pytest.mark.parametrize("dyn", [16, 200, 4096])
def test_values_are_what_the_isa_says(dyn):
    assert ptxjit_ok_with_ptxas(READS)
    n = 64
    out = np.zeros((n, 20), np.uint32)
    times = np.zeros((n, 4), np.uint64)
    t0 = time.time_ns()
    ptxjit.Module(READS).get_function("k")((2, 1, 1), (n, 1, 1), [out, times], shared_mem=dyn)
    t1 = time.time_ns()
    (dyn_size, total, aggr, begin, end, cap, slot0, slot1, user, dyn_at, lo, hi, grid32, grid32b, tid16, tid,
     env0, env31) = (out[:, k].astype(np.int64) for k in range(18))
    g0, graph, gridid, g1 = (times[:, k].astype(np.int64) for k in range(4))
    assert np.all(dyn_size == dyn)  # the launch's dynamic shared bytes
    # the user's shared memory (100 static bytes, up to 15 of alignment before the 16-byte aligned dynamic
    # array, dyn) in 128-byte units (PTX ISA: the allocation unit of sm_8x/sm_9x), without the reserved region
    used = 100 + dyn
    assert np.all(total % 128 == 0) and np.all(total >= used) and np.all(total < used + 15 + 128)
    assert np.all(cap == 1024)  # cudaDevAttrReservedSharedMemoryPerBlock on sm_80 / sm_90
    assert np.all(aggr == total + cap)  # %aggr_smem_size: user shared memory plus the reserved region
    assert np.all(end - begin == cap)
    # the reserved region is apart from the user's variables; its slots lie in it, 288 bytes each at least
    # (cooperative groups' scratch: <cooperative_groups/details/memory.h>)
    u0, d0 = int(user[0]), int(dyn_at[0])
    for lo_, hi_ in ((u0, u0 + 100), (d0, d0 + dyn)):
        assert hi_ <= begin[0] or lo_ >= end[0] or lo_ == hi_
    s0, s1 = sorted((int(slot0[0]), int(slot1[0])))
    assert begin[0] <= s0 and s0 + 288 <= s1 and s1 + 288 <= end[0]
    # %globaltimer: nanoseconds of the host's clock, never going back; _lo/_hi are its halves
    slew = _slew_ns()
    t0, t1 = t0 - slew, t1 + slew
    assert np.all(t0 <= g0) and np.all(g0 <= g1) and np.all(g1 <= t1)
    both = (hi << 32) | lo
    assert np.all(both >= t0) and np.all(both <= t1)
    assert np.all(graph == 0)  # not launched in a CUDA graph
    assert len(set(gridid.tolist())) == 1 and np.all(grid32 == gridid & 0xFFFFFFFF) and np.all(grid32b == grid32)
    assert np.array_equal(tid16, tid) and np.array_equal(tid[:n], np.arange(n))
    assert np.all(env0 == 0) and np.all(env31 == 0)  # driver-defined; 0 outside a cooperative launch


def ptxjit_ok_with_ptxas(text: str) -> bool:
    """PTXJIT_TEST_PTXAS=1: the hand-written module is valid for ptxas too."""
    if os.environ.get("PTXJIT_TEST_PTXAS") == "1" and shutil.which("ptxas") is not None:
        return ptxas_accepts(text)
    return True


def test_globaltimer_advances_with_wall_time():
    body = READS.replace("mov.u64 %rd6, %globaltimer;", """mov.u32 %r30, 0;
$L_spin:
    add.u32 %r30, %r30, 1;
    setp.lt.u32 %p1, %r30, 3000000;
    @%p1 bra $L_spin;
    mov.u64 %rd6, %globaltimer;""")
    out = np.zeros((1, 20), np.uint32)
    times = np.zeros((1, 4), np.uint64)
    t0 = time.time_ns()
    ptxjit.Module(body).get_function("k")((1, 1, 1), (1, 1, 1), [out, times], shared_mem=16)
    t1 = time.time_ns()
    g0, g1 = int(times[0, 0]), int(times[0, 3])
    slew = _slew_ns()
    assert t0 - slew <= g0 < g1 <= t1 + slew  # a spin of some milliseconds between the reads shows


# translating nvcc's cooperative-groups tile code takes LLVM about ten seconds


@slow
def test_cooperative_groups_tile_sync_through_the_reserved_region():
    """nvcc's thread_block_tile<64>.sync() keeps its barrier at %reserved_smem_offset_1."""
    text = (DATA / "special_registers.ptx").read_text()
    assert "%reserved_smem_offset_1" in text
    fn = ptxjit.Module(text).get_function("tile64_sums")
    rng = np.random.default_rng(7)
    for block, n in ((128, 1000), (128, 128)):
        grid = -(-n // block)
        x = rng.integers(-1000, 1000, grid * block).astype(np.int32)
        out = np.zeros(grid * block // 64, np.int32)
        fn((grid, 1, 1), (block, 1, 1), [x, out, np.int32(n)])
        ref = np.where(np.arange(grid * block) < n, x, 0).reshape(-1, 64).sum(axis=1)
        np.testing.assert_array_equal(out, ref)


def test_cuda_ptx_special_register_reads():
    """libcu++'s cuda::ptx::get_sreg_* as nvcc compiles them."""
    fn = ptxjit.Module((DATA / "special_registers.ptx").read_text()).get_function("launch_registers")
    for block, dyn in ((64, 256), (32, 1000)):
        out = np.zeros(4, np.uint32)
        times = np.zeros(2, np.uint64)
        t0 = time.time_ns()
        fn((1, 1, 1), (block, 1, 1), [out, times], shared_mem=dyn)
        t1 = time.time_ns()
        dyn_size, total, aggr, check = (int(v) for v in out)
        assert dyn_size == dyn
        assert total % 128 == 0 and 160 + dyn <= total < 160 + 16 + dyn + 128  # static 160 B + dynamic
        assert aggr == total + 1024
        assert check == 3 + block - 1  # stat[3] + dyn[block - 1]: both written before __syncthreads()
        slew = _slew_ns()
        assert t0 - slew <= int(times[0]) <= t1 + slew and int(times[1]) == 0
