"""Special registers: thread / block geometry, lanes and warps, lane masks, clocks and timers, SM ids,
%dynamic_smem_size.  Expectations come from enumerating the launch geometry in Python."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.unit.floatutil import launch

GEOM_BODY = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %ntid.y;
    mov.u32 %r6, %ntid.z;
    mov.u32 %r7, %ctaid.x;
    mov.u32 %r8, %ctaid.y;
    mov.u32 %r9, %ctaid.z;
    mov.u32 %r10, %nctaid.x;
    mov.u32 %r11, %nctaid.y;
    mov.u32 %r12, %nctaid.z;
    // linear block id and linear thread id, then one 16-word record per thread
    mad.lo.u32 %r13, %r9, %r11, %r8;
    mad.lo.u32 %r13, %r13, %r10, %r7;
    mul.lo.u32 %r14, %r4, %r5;
    mul.lo.u32 %r14, %r14, %r6;
    mad.lo.u32 %r15, %r3, %r5, %r2;
    mad.lo.u32 %r15, %r15, %r4, %r1;
    mad.lo.u32 %r16, %r13, %r14, %r15;
    mul.wide.u32 %rd1, %r16, 64;
    add.s64 %rd2, %rd40, %rd1;
    st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd2+16], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%rd2+32], {%r9, %r10, %r11, %r12};
    mov.u32 %r17, %laneid;
    mov.u32 %r18, %warpid;
    mov.u32 %r19, %nwarpid;
    st.global.v4.u32 [%rd2+48], {%r15, %r17, %r18, %r19};
"""


GEOMETRIES = [((2, 3, 2), (4, 2, 3)), ((3, 1, 1), (40, 1, 1)), ((1, 2, 3), (16, 5, 1)),
              ((1, 1, 1), (1, 1, 1))]


@pytest.mark.parametrize("grid,block", GEOMETRIES)
def test_thread_and_block_geometry(grid, block):
    nthreads = int(np.prod(block))
    nblocks = int(np.prod(grid))
    out = np.full((nblocks * nthreads, 16), 0xDEADBEEF, dtype=np.uint32)
    launch(GEOM_BODY, [("u64", "out")], [out], grid=grid, block=block)
    bx, by, bz = block
    gx, gy, gz = grid
    for cz, cy, cx in itertools.product(range(gz), range(gy), range(gx)):
        lin_block = (cz * gy + cy) * gx + cx
        warp_ids = {}
        for tz, ty, tx in itertools.product(range(bz), range(by), range(bx)):
            lin = (tz * by + ty) * bx + tx
            rec = [int(v) for v in out[lin_block * nthreads + lin]]
            assert rec[:12] == [tx, ty, tz, bx, by, bz, cx, cy, cz, gx, gy, gz]
            assert rec[12] == lin
            assert rec[13] == lin % 32  # %laneid
            warp_ids.setdefault(lin // 32, set()).add(rec[14])
            assert rec[14] < rec[15]  # %warpid < %nwarpid
        # all lanes of a warp agree on %warpid, and different warps of the CTA have different ids
        assert all(len(ids) == 1 for ids in warp_ids.values())
        assert len({next(iter(ids)) for ids in warp_ids.values()}) == len(warp_ids)


def test_same_module_relaunched_with_other_geometry():
    out1 = np.zeros((6, 16), dtype=np.uint32)
    out2 = np.zeros((8, 16), dtype=np.uint32)
    launch(GEOM_BODY, [("u64", "out")], [out1], grid=(3, 1, 1), block=(2, 1, 1))
    launch(GEOM_BODY, [("u64", "out")], [out2], grid=(1, 2, 1), block=(1, 1, 4))
    assert [int(v) for v in out1[5, :12]] == [1, 0, 0, 2, 1, 1, 2, 0, 0, 3, 1, 1]
    assert [int(v) for v in out2[7, :12]] == [0, 0, 3, 1, 1, 4, 0, 1, 0, 1, 2, 1]


def test_lanemasks():
    body = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r8, %tid.x;
    mov.u32 %r9, %tid.y;
    mov.u32 %r10, %ntid.x;
    mad.lo.u32 %r1, %r9, %r10, %r8;
    mov.u32 %r2, %lanemask_eq;
    mov.u32 %r3, %lanemask_lt;
    mov.u32 %r4, %lanemask_le;
    mov.u32 %r5, %lanemask_gt;
    mov.u32 %r6, %lanemask_ge;
    mov.u32 %r7, %laneid;
    mul.wide.u32 %rd1, %r1, 32;
    add.s64 %rd2, %rd40, %rd1;
    st.global.v4.u32 [%rd2], {%r2, %r3, %r4, %r5};
    st.global.v2.u32 [%rd2+16], {%r6, %r7};
"""
    n = 80
    out = np.zeros((n, 8), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=(16, 5, 1))
    for t in range(n):
        lane = t % 32
        eq = 1 << lane
        lt = eq - 1
        le = (eq << 1) - 1
        gt = 0xFFFFFFFF ^ le
        ge = 0xFFFFFFFF ^ lt
        assert [int(v) for v in out[t, :6]] == [eq, lt, le & 0xFFFFFFFF, gt, ge, lane], t


def test_clocks_and_timer_are_monotonic():
    body = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, %clock64;
    mov.u32 %r2, %clock;
    mov.u64 %rd2, %globaltimer;
    mov.u32 %r10, 0;
    mov.u32 %r11, 1;
$L_spin:
    mad.lo.u32 %r11, %r11, 1103515245, 12345;
    add.u32 %r10, %r10, 1;
    setp.lt.u32 %p1, %r10, 20000;
    @%p1 bra $L_spin;
    mov.u64 %rd3, %clock64;
    mov.u32 %r3, %clock;
    mov.u64 %rd4, %globaltimer;
    mul.wide.u32 %rd5, %r1, 48;
    add.s64 %rd6, %rd40, %rd5;
    st.global.u64 [%rd6], %rd1;
    st.global.u64 [%rd6+8], %rd3;
    st.global.u64 [%rd6+16], %rd2;
    st.global.u64 [%rd6+24], %rd4;
    st.global.v2.u32 [%rd6+32], {%r2, %r3};
    st.global.u32 [%rd6+40], %r11;
"""
    n = 8
    out = np.zeros((n, 6), dtype=np.uint64)
    launch(body, [("u64", "out")], [out], block=n)
    for t in range(n):
        c0, c1, g0, g1 = (int(v) for v in out[t, :4])
        k0, k1 = int(out[t, 4]) & 0xFFFFFFFF, int(out[t, 4]) >> 32
        assert c1 >= c0
        assert g1 >= g0 > 0
        assert (k1 - k0) % (1 << 32) < (1 << 31)  # 32-bit clock moves forward (modulo wrap-around)


def test_smid_gridid_dynamic_smem_size():
    decl = ".extern .shared .align 16 .b8 dsm[];"
    body = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    mov.u32 %r5, %smid;
    mov.u32 %r6, %nsmid;
    mov.u64 %rd1, %gridid;
    mov.u32 %r7, %dynamic_smem_size;
    mul.wide.u32 %rd2, %r4, 24;
    add.s64 %rd3, %rd40, %rd2;
    st.global.v2.u32 [%rd3], {%r5, %r6};
    st.global.u64 [%rd3+8], %rd1;
    st.global.u32 [%rd3+16], %r7;
"""
    for smem in (0, 384, 4096):
        out = np.zeros((3 * 32, 6), dtype=np.uint32)
        launch(body, [("u64", "out")], [out], grid=3, block=32, shared_mem=smem, extra_decls=decl)
        smid, nsmid = out[:, 0], out[:, 1]
        assert np.all(smid < nsmid)
        assert len(set(int(x) for x in nsmid)) == 1
        grid_ids = {int(out[i, 2]) | (int(out[i, 3]) << 32) for i in range(out.shape[0])}
        assert len(grid_ids) == 1  # one grid, one id
        assert np.all(out[:, 4] == smem)
