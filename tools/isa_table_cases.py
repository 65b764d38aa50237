"""Cases for cross-checking the ISA table against ptxas (used by tools/isa_table_check.py --ptxas).

Two sources:
- CASES: hand-written instruction bodies (valid and invalid) in a kernel that declares registers of
  every type (`%<type>_<n>`, e.g. %u32_1, %f16x2_0, plus %r (b32), %rd (b64), %f (f32), %p (pred)),
  a .shared array `sh`, a .local array `lo`, a .global `gv` and a .const `cv`;
- the register-class matrix: each operand position of a set of instructions with a register of
  every type;
- mutations(): one-line mutations of the gpu-golden kernels (drop/add/replace a modifier or type,
  add/drop an operand, swap a register for one of another type).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

REGTYPES = ["pred", "b8", "u8", "s8", "b16", "u16", "s16", "f16", "b32", "u32", "s32", "f32", "f16x2",
            "b64", "u64", "s64", "f64", "b128"]


def kernel(body: str, target: str = "sm_90a") -> str:
    regs = "".join(f"  .reg .{t} %{t}_<4>;\n" for t in REGTYPES)
    return (f".version 8.7\n.target {target}\n.address_size 64\n.global .u32 gv;\n.const .u32 cv;\n"
            f".visible .entry k(.param .u64 p)\n{{\n{regs}  .reg .b32 %r<9>;\n  .reg .b64 %rd<9>;\n"
            f"  .reg .f32 %f<9>;\n  .reg .pred %p<9>;\n  .shared .b32 sh[64];\n  .local .b32 lo[4];\n"
            f"{body}\n  ret;\n}}\n")


HAND = r"""
add.s32 %r1, %r2, %r3;
add.s32 %r1, %r2;
add.s32 %r1, %r2, %r3, %r4;
add.b8 %b8_1, %b8_2, %b8_0;
add.u32 %u32_1, %s32_2, %b32_3;
add.u32 %r1, %f16x2_1, %r1;
add.s32.sat %r1, %r1, %r1;
add.sat.u32 %r1, %r1, %r1;
add.s32 _, %r1, %r2;
add.s32 %r1, !%r2, %r3;
add.s32 %r1, %tid.x, 1;
sub.f32 %f1, %rd1, %f2;
sub.f32 %f1, %b32_1, %f2;
sub.f32 %f1, %u32_1, %f2;
add.f32 %f1, %f2, 1;
add.f32 %f1, %f2, 1.0;
add.f32 %f1, %f2, 0f3F800000;
add.s32 %r1, %r2, 0f3F800000;
add.f16 %f16_1, %f16_1, %b16_1;
add.bf16 %b16_1, %b16_2, %b16_3;
add.bf16 %f16_1, %b16_2, %b16_3;
add.rn.f64 %f64_1, %f64_1, %b64_1;
add.rn.ftz.f64 %f64_1, %f64_1, %f64_1;
add.rz.f16 %f16_1, %f16_1, %f16_1;
fma.rn.f32 %f1, %f2, %f3;
fma.rn.f32 %f1, %f2, %f3, %f4;
fma.rn.f23 %f1, %f2, %f3, %f4;
fma.f32 %f1, %f2, %f3, %f4;
fma.rn.sat.relu.f16 %f16_1, %f16_1, %f16_1, %f16_1;
fma.rn.relu.bf16 %b16_1, %b16_1, %b16_1, %b16_1;
not.b32 %r1, %r2, %r3;
not.b32 %r1, %r2;
not.pred %p1, !%p2;
cnot.pred %p1, %p2;
and.pred %p1, !%p2, %p3;
and.b32 %r1, %r2, 0f3F800000;
ld.foo.nc.f32 %f1, [%rd1];
ld.global.nc.f32 %f1, [%rd1];
ld.nc.global.f32 %f1, [%rd1];
ld.shared.nc.u32 %r1, [%rd1];
ld.global.f16 %f16_1, [%rd1];
ld.global.b16 %f16_1, [%rd1];
ld.global.u8 %r1, [%rd1];
ld.global.u32 %rd1, [%rd1];
ld.global.u32 %u16_1, [%rd1];
ld.global.f32 %rd1, [%rd1];
ld.global.f32 %u64_1, [%rd1];
ld.global.u32 %r1, [%f1];
ld.global.u32 %r1, [%r1];
ld.shared.u32 %r1, [%r1];
ld.global.u32 %r1, [%p1];
ld.shared.u32 %r1, [gv];
ld.global.u32 %r1, [sh];
ld.u32 %r1, [sh];
ld.u32 %r1, [cv+4];
st.u32 [cv], %r1;
atom.add.u32 %r1, [cv], 1;
ld.u32 %r1, [lo];
st.u32 [sh+4], %r1;
ld.const.u32 %r1, [cv];
ld.global.u32 %r1, [cv];
ld.param.u64 %rd1, [p];
ld.global.u64 %rd1, [p];
ld.u64 %rd1, [p];
ld.local.u32 %r1, [lo];
ld.global.u32 _, [%rd1];
ld.relaxed.global.u32 %r1, [%rd1];
ld.relaxed.gpu.global.u32 %r1, [%rd1];
ld.acquire.sys.global.u32 %r1, [%rd1];
ld.gpu.global.u32 %r1, [%rd1];
ld.volatile.global.ca.u32 %r1, [%rd1];
ld.global.ca.cg.u32 %r1, [%rd1];
ld.global.v2.f32 {%f1, %f2}, [%rd1];
ld.global.v2.f32 {%f1, _}, [%rd1];
ld.global.v4.f32 {%f1, %f2}, [%rd1];
ld.global.v2.f32 %f1, [%rd1];
ld.global.f32 {%f1}, [%rd1];
ld.global.v2.b128 {%b128_1, %b128_1}, [%rd1];
ld.global.L2::cache_hint.u32 %r1, [%rd1], %rd2;
ld.global.L2::128B.u32 %r1, [%rd1];
ld.global.L1::evict_last.u32 %r1, [%rd1];
st.const.u32 [%rd1+12], %r2;
st.global.u32 [%rd1+12], %r2;
st.global.ca.u32 [%rd1], %r1;
st.global.wb.u32 [%rd1], %r1;
st.global.u32 [%rd1], 5;
st.global.f32 [%rd1], 0f3F800000;
st.global.u32 [%rd1], %tid.x;
st.global.v2.f32 [%rd1], {%f1, %f2};
st.global.v2.f32 [%rd1], {%f1, %f2, %f3};
st.release.gpu.global.u32 [%rd1], %r1;
st.acquire.gpu.global.u32 [%rd1], %r1;
mov.u32 %r1, %tid.x;
mov.u64 %rd1, %tid.x;
mov.u32 %r1, %clock64;
mov.u64 %rd1, %clock64;
mov.u16 %u16_1, %tid.x;
mov.u32 %r1, %rd1;
mov.f32 %f1, 1;
mov.f32 %f1, 1.0;
mov.b32 %r1, 0f3F800000;
mov.b16 %f16_1, 0x3c00;
mov.b64 %rd1, {%r1, %r2};
mov.b32 {%b16_1, %b16_2}, %r1;
mov.b32 {%b16_1, _}, %r1;
mov.b64 {%r1, %r2, %r3}, %rd1;
mov.u32 _, %r1;
mov.u64 %rd1, gv;
mov.u64 %rd1, sh;
cvta.global.u64 %rd1, gv;
cvta.to.global.u64 %rd1, gv;
cvta.shared.u64 %rd1, gv;
cvta.to.shared.u32 %r1, %rd1;
cvta.to.global.u64 %rd1, %rd1;
cvt.rn.f32.s32 %f1, %r1;
cvt.f32.s32 %f1, %r1;
cvt.rn.s32.f32 %r1, %f1;
cvt.rzi.s32.f32 %r1, %f1;
cvt.s32.f32 %r1, %f1;
cvt.rni.u32.s32 %r1, %r1;
cvt.f64.f32 %f64_1, %f1;
cvt.rn.f64.f32 %f64_1, %f1;
cvt.f32.f64 %f1, %f64_1;
cvt.rn.f32.f64 %f1, %f64_1;
cvt.rni.f32.f32 %f1, %f1;
cvt.rn.f32.f32 %f1, %f1;
cvt.u32.u64 %r1, %rd1;
cvt.u64.u32 %rd1, %r1;
cvt.u64.u32 %r1, %r1;
cvt.u32.u16 %r1, %tid.x;
cvt.rn.f32.u32 %f1, %tid.x;
cvt.rn.f16.f32 %f16_1, %f1;
cvt.rn.f16.f32 %b32_1, %f1;
cvt.rn.bf16.f32 %b16_1, %f1;
cvt.rn.bf16.f32 %b32_1, %f1;
cvt.rn.bf16.f32 %f16_1, %f1;
cvt.rn.f16x2.f32 %r1, %f1, %f2;
cvt.rn.f16x2.f32 %r1, %f1;
cvt.rn.satfinite.e4m3x2.f32 %b16_1, %f1, %f2;
cvt.rn.e4m3x2.f32 %b16_1, %f1, %f2;
cvt.rn.satfinite.e4m3x2.f32 %r1, %f1, %f2;
cvt.rn.f16x2.e4m3x2 %r1, %b16_1;
cvt.pack.sat.u8.s32.b32 %r1, %r1, %r2, %r3;
cvt.pack.sat.u16.s32 %r1, %r1, %r2;
cvt.rna.tf32.f32 %r1, %f1;
setp.lt.s32 %p1, %r1, %r2;
setp.lt.s32 %r1, %r1, %r2;
setp.lo.s32 %p1, %r1, %r1;
setp.lo.u32 %p1, %r1, %r1;
setp.lt.b32 %p1, %r1, %r1;
setp.eq.b32 %p1, %r1, %r1;
setp.equ.s32 %p1, %r1, %r1;
setp.equ.f32 %p1, %f1, %f1;
setp.eq.ftz.f64 %p1, %f64_1, %f64_1;
setp.eq.ftz.f32 %p1, %f1, %f1;
setp.eq.s32 %p1|%p2, %r1, 1;
setp.eq.s32 %p1|_, %r1, 1;
setp.eq.s32 _, %r1, 1;
setp.lt.and.s32 %p1, %r1, 1, !%p2;
setp.lt.and.s32 %p1, %r1, 1;
setp.lt.s32 %p1, %r1, 1, %p2;
setp.lt.s32 %p1, !%p1, %r1;
setp.eq.f16x2 %p1|%p2, %r1, %r1;
setp.eq.f16 %p1|%p2, %b16_1, %b16_1;
setp.eq.u32 %p1, %tid.x, 0;
set.lt.u32.f32 %r1, %f1, %f2;
set.lt.f32.s32 %f1, %r1, %r2;
selp.b32 %r1, %r2, 1, !%p2;
selp.b32 %r1, %r2, 1, %r2;
selp.f32 %f1, %f2, %f3, %p1;
selp.b32 %r1, %r2, %r3, 1;
selp.b32 %r1, %r2, %r3, 0;
selp.b32 %r1, %r2, %r3, -1;
selp.f64 %f64_1, %f64_2, %f64_3, 2;
selp.b32 %r1, %r2, %r3, 1.0;
selp.b32 %r1, %r2, %r3, 0f3F800000;
setp.lt.and.s32 %p1, %r1, 1, 1;
setp.lt.or.s32 %p1|%p2, %r1, 1, 0;
setp.lt.and.s32 %p1, %r1, 1, %r2;
set.lt.and.u32.s32 %r1, %r2, 1, 1;
set.lt.xor.f32.s32 %f1, %r2, 1, 0;
set.lt.and.u32.s32 %r1, %r2, 1, 1.0;
slct.f32.s32 %f1, %f2, %f3, %r1;
slct.f32.f32 %f1, %f2, %f3, %r1;
mul.wide.s32 %rd1, %r1, %r2;
mul.wide.s32 %r1, %r1, %r2;
mul.wide.s64 %rd1, %rd1, %rd2;
mul.s32 %r1, %r1, %r2;
mul.lo.s32 %r1, %r1, %r2;
mad.wide.u32 %rd1, %r1, %r2, %rd3;
mad.wide.u32 %rd1, %r1, %r2, %r3;
mad.hi.sat.s32 %r1, %r1, %r2, %r3;
mad.lo.sat.s32 %r1, %r1, %r2, %r3;
mad.f32 %f1, %f1, %f1, %f1;
mad.rn.f32 %f1, %f1, %f1, %f1;
div.f32 %f1, %f1, %f1;
div.approx.f32 %f1, %f1, %f1;
div.full.f64 %f64_1, %f64_1, %f64_1;
div.rn.f64 %f64_1, %f64_1, %f64_1;
min.abs.f32 %f1, %f1, %f1;
min.xorsign.f32 %f1, %f1, %f1;
min.xorsign.abs.f32 %f1, %f1, %f1;
min.relu.s32 %r1, %r1, %r1;
min.relu.u32 %r1, %r1, %r1;
min.NaN.f64 %f64_1, %f64_1, %f64_1;
popc.b64 %r1, %rd1;
popc.b64 %rd1, %rd1;
clz.b32 %r1, %r1;
bfind.u64 %r1, %rd1;
brev.b64 %rd1, %rd1;
bfe.u64 %rd1, %rd1, %r1, %r2;
bfe.u64 %rd1, %rd1, %rd1, %r2;
bfi.b32 %r1, %r2, %r3, %r4, %r5;
bfi.b32 %r1, %r2, %r3, %r4;
shl.b64 %rd1, %rd1, %r1;
shl.b64 %rd1, %rd1, %rd1;
shl.u32 %r1, %r1, 2;
shr.s32 %r1, %r1, 2;
shf.l.wrap.b32 %r1, %r2, %r3, %r4;
shf.l.b32 %r1, %r2, %r3, %r4;
shf.wrap.b32 %r1, %r2, %r3, %r4;
prmt.b32 %r1, %r2, %r3, %r4;
prmt.b32.f4e %r1, %r2, %r3, %r4;
prmt.b32.f4e %r1, %r2, %r3;
prmt.b32.xyz %r1, %r2, %r3, %r4;
lop3.b32 %r1, %r2, %r3, %r4, 0x96;
lop3.b32 %r1, %r2, %r3, %r4, %r5;
lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x96, %p2;
dp4a.u32.s32 %r1, %r2, %r3, %r4;
dp2a.lo.u32.u32 %r1, %r2, %r3, %r4;
dp2a.u32.u32 %r1, %r2, %r3, %r4;
bmsk.clamp.b32 %r1, %r2, %r3;
szext.wrap.s32 %r1, %r2, %r3;
szext.s32 %r1, %r2, %r3;
fns.b32 %r1, %r2, %r3, %r4;
abs.u32 %r1, %r2;
neg.s32 %r1, %r2;
abs.ftz.f64 %f64_1, %f64_1;
abs.bf16 %b16_1, %b16_1;
rcp.approx.ftz.f64 %f64_1, %f64_1;
rcp.approx.f64 %f64_1, %f64_1;
rcp.f32 %f1, %f1;
sqrt.approx.f64 %f64_1, %f64_1;
rsqrt.approx.f64 %f64_1, %f64_1;
sin.approx.f32 %f1, %f1;
sin.f32 %f1, %f1;
ex2.approx.f16 %f16_1, %f16_1;
ex2.approx.ftz.bf16 %b16_1, %b16_1;
ex2.approx.bf16 %b16_1, %b16_1;
tanh.approx.f32 %f1, %f1;
tanh.approx.f64 %f64_1, %f64_1;
testp.finite.f32 %p1, %f1;
testp.finite.f32 %r1, %f1;
testp.finite.s32 %p1, %r1;
copysign.f32 %f1, %f1, %f1;
atom.global.add.u32 %r1, [%rd1], 1;
atom.global.add.u32 _, [%rd1], 1;
atom.global.add.s64 %rd1, [%rd1], %rd1;
atom.global.min.f32 %f1, [%rd1], %f1;
atom.global.inc.u64 %rd1, [%rd1], %rd1;
atom.global.add.b32 %r1, [%rd1], %r1;
atom.global.exch.u32 %r1, [%rd1], %r1;
atom.global.exch.b32 %r1, [%rd1], %r1;
atom.global.cas.b32 %r1, [%rd1], %r1, %r2;
atom.global.cas.b32 %r1, [%rd1], %r1;
atom.global.cas.u32 %r1, [%rd1], %r1, %r2;
atom.global.and.b32 %r1, [%rd1], %r1;
atom.global.max.f16 %f16_1, [%rd1], %f16_2;
atom.global.add.noftz.f16 %f16_1, [%rd1], %f16_2;
atom.global.add.f16 %f16_1, [%rd1], %f16_2;
atom.global.add.v4.f32 {%f1,%f2,%f3,%f4}, [%rd1], {%f1,%f2,%f3,%f4};
atom.global.max.v2.f32 {%f1,%f2}, [%rd1], {%f1,%f2};
atom.shared.add.v2.f32 {%f1,%f2}, [%rd1], {%f1,%f2};
atom.global.add.noftz.v4.f16 {%b16_1,%b16_1,%b16_1,%b16_1}, [%rd1], {%b16_1,%b16_1,%b16_1,%b16_1};
atom.local.add.u32 %r1, [%rd1], %r1;
atom.add.u32 %r1, [%rd1], %r1;
atom.relaxed.gpu.global.add.u32 %r1, [%rd1], %r1;
atom.gpu.global.add.u32 %r1, [%rd1], %r1;
atom.global.add.u32 %r1, [%rd1], %rd1;
red.global.add.u32 [%rd1], 1;
red.global.add.u32 %r1, [%rd1], 1;
red.global.cas.b32 [%rd1], %r1, %r2;
red.shared.add.f64 [%r1], %f64_1;
bar.sync 0;
bar.sync 0, 64;
bar.sync %r1;
bar.sync;
bar.arrive 0;
bar.arrive 0, 64;
barrier.sync.aligned 0;
bar.red.popc.u32 %r1, 0, %p1;
bar.red.or.pred %p1, 0, !%p2;
bar.warp.sync -1;
vote.sync.any.pred %p1, !%p2, 0xffffffff;
vote.sync.ballot.b32 %r1, %p2, %r3;
vote.sync.ballot.b32 %p1, %p2, %r3;
vote.sync.any.b32 %r1, %p2, %r3;
vote.sync.all.pred %p1, 1, 0xffffffff;
vote.sync.uni.pred %p1, 0, 0xffffffff;
vote.sync.ballot.b32 %r1, 0, -1;
vote.sync.ballot.b32 %r1, 5, -1;
vote.sync.ballot.b32 %r1, 0f3F800000, -1;
bar.red.popc.u32 %r1, 0, 1;
bar.red.and.pred %p1, 0, 0;
bar.red.or.pred %p1, 0, 64, 1;
barrier.red.popc.u32 %r1, 0, 1;
bar.red.and.pred %p1, 0, 1.0;
lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x96, 1;
shfl.sync.idx.b32 %r1|%p1, %r2, 1, 31, -1;
shfl.sync.idx.b32 %r1, %r2, 1, 31, -1;
shfl.sync.idx.b32 %r1, %r2, 1, 31;
shfl.sync.idx.b32 _|%p1, %r2, 1, 31, -1;
shfl.sync.idx.b64 %rd1, %rd2, 1, 31, -1;
match.any.sync.b64 %r1, %rd1, -1;
match.all.sync.b32 %r1|%p1, %r1, -1;
match.any.sync.b32 %r1|%p1, %r1, -1;
redux.sync.add.u32 %r1, %r2, -1;
redux.sync.and.u32 %r1, %r2, -1;
activemask.b32 %r1;
activemask.b64 %rd1;
membar.gl;
membar.cta;
membar.foo;
fence.sc.gpu;
fence.acq_rel.cta;
fence.proxy.async.shared::cta;
fence.mbarrier_init.release.cluster;
mbarrier.init.shared.b64 [sh], 1;
mbarrier.arrive.shared.b64 %rd1, [sh];
mbarrier.arrive.shared.b64 _, [sh];
mbarrier.arrive.shared.b32 %rd1, [sh];
mbarrier.test_wait.parity.shared.b64 %p1, [sh], 0;
mbarrier.try_wait.parity.shared::cta.b64 %p1, [sh], %r1;
cp.async.ca.shared.global [sh], [%rd1], 4;
cp.async.ca.shared.global [sh], [%rd1], 4, %r1;
cp.async.cg.shared.global [%r1], [%rd1], 16;
cp.async.ca.shared.global [sh+16], [%rd1+8], 8, 4;
cp.async.ca.shared.global [sh], [gv+4], 4;
cp.async.ca.shared.global [sh], [cv], 4;
cp.async.ca.shared.global [gv], [%rd1], 4;
cp.async.ca.shared.global [lo], [%rd1], 4;
cp.async.ca.shared.global [16], [%rd1], 4;
cp.async.cg.shared.global [sh], [%rd1], 16, %p1;
cp.async.cg.shared.global [sh], [%rd1], 16, !%p1;
cp.async.cg.shared.global [sh], [%rd1], 16, !%r2;
cp.async.cg.shared.global [sh], [%rd1], 16, %rd2;
cp.async.cg.shared.global [sh], [%rd1], 16, %f1;
cp.async.cg.shared.global.L2::cache_hint [sh], [%rd1], 16, %rd2;
cp.async.cg.shared.global.L2::cache_hint [sh], [%rd1], 16, !%p1, %rd2;
cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [sh], [gv], 16, [sh+8];
cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [sh], [gv], 16, [gv];
cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [gv], [%rd1], 16, [sh];
cp.async.bulk.global.shared::cta.bulk_group [gv+64], [sh+16], 16;
cp.async.bulk.global.shared::cta.bulk_group [sh], [sh+16], 16;
cp.async.commit_group;
cp.async.wait_group 1;
cp.async.wait_all;
nanosleep.u32 100;
trap;
exit;
@%p1 exit;
@!%p1 exit;
@%r1 exit;
@%clock64 exit;
griddepcontrol.wait;
vadd.s32.s32.s32 %r1, %r2, %r3;
vadd.s32.s32.s32.sat %r1, %r2, %r3;
vadd.s32.s32.s32.add %r1, %r2, %r3, %r4;
vadd.s32.s32 %r1, %r2, %r3;
vadd2.u32.u32.u32 %r1, %r2, %r3, %r4;
vadd2.u32.u32.u32 %r1, %r2, %r3;
vset.u32.u32.lt %r1, %r2, %r3;
vset.u32.u32 %r1, %r2, %r3;
vshl.u32.u32.u32.clamp %r1, %r2, %r3;
vshl.u32.u32.u32 %r1, %r2, %r3;
vmad.u32.u32.u32 %r1, %r2, %r3, %r4;
ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r2}, [%r3];
ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r2}, [%r3], %r4;
movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;
mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};
mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2}, {%r3};
mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3}, {%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};
mma.sync.aligned.m16n8k8.row.col.f32.f16.f16 {%f1,%f2,%f3,%f4}, {%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};
mma.sync.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};
wgmma.fence.sync.aligned;
wgmma.wait_group.sync.aligned 0;
wgmma.commit_group.sync.aligned;
isspacep.global %p1, %rd1;
isspacep.global %r1, %rd1;
prefetch.global.L2 [%rd1];
prefetch.global [%rd1];
prefetchu.L1 [%rd1];
xyzzy.u32 %r1, %r2;
"""

CASES: list[str] = [ln.strip() for ln in HAND.strip().splitlines() if ln.strip()]

# The register-class matrix: instruction templates with {} at the position being varied.
MATRIX = [
    "add.s16 {}, %s16_1, %s16_2;", "add.u32 {}, %r1, %r2;", "add.u32 %r1, {}, %r2;", "add.s64 {}, %rd1, %rd2;",
    "add.f32 {}, %f1, %f2;", "add.f32 %f1, {}, %f2;", "add.f64 %f64_1, {}, %f64_2;", "add.f16 {}, %f16_1, %f16_2;",
    "add.f16x2 {}, %f16x2_1, %f16x2_2;", "add.bf16 {}, %b16_1, %b16_2;", "add.bf16x2 %b32_1, {}, %b32_2;",
    "and.b16 {}, %b16_1, %b16_2;", "and.b32 {}, %r1, %r2;", "and.b64 %rd1, {}, %rd2;", "and.pred {}, %p1, %p2;",
    "mov.b32 {}, %r1;", "mov.u32 %r1, {};", "mov.f32 {}, %f1;", "mov.b64 {}, %rd1;", "mov.u16 {}, %u16_1;",
    "ld.global.u8 {}, [%rd1];", "ld.global.s16 {}, [%rd1];", "ld.global.b32 {}, [%rd1];", "ld.global.f32 {}, [%rd1];",
    "ld.global.f64 {}, [%rd1];", "ld.global.u64 {}, [%rd1];", "ld.global.b128 {}, [%rd1];",
    "st.global.u16 [%rd1], {};", "st.global.f32 [%rd1], {};", "st.global.b64 [%rd1], {};",
    "ld.global.u32 %r1, [{}];", "ld.shared.u32 %r1, [{}];",
    "cvt.u32.u8 %r1, {};", "cvt.u8.u32 {}, %r1;", "cvt.rn.f32.s32 {}, %r1;", "cvt.rn.f32.s32 %f1, {};",
    "cvt.rzi.s32.f64 %r1, {};", "cvt.f32.f16 %f1, {};", "cvt.rn.f16.f32 {}, %f1;", "cvt.f32.bf16 %f1, {};",
    "cvt.rn.bf16.f32 {}, %f1;", "cvt.u64.s32 {}, %r1;", "cvt.rn.tf32.f32 {}, %f1;",
    "setp.eq.s32 {}, %r1, %r2;", "setp.eq.s32 %p1, {}, %r2;", "setp.lt.f32 %p1, {}, %f2;",
    "setp.eq.f16 %p1, {}, %f16_2;", "setp.eq.b16 %p1, {}, %b16_2;",
    "selp.u32 {}, %r1, %r2, %p1;", "selp.u32 %r1, %r1, %r2, {};", "selp.f64 %f64_1, {}, %f64_2, %p1;",
    "mul.wide.s32 {}, %r1, %r2;", "mul.wide.u16 %r1, {}, %u16_2;", "mad.wide.s32 %rd1, %r1, %r2, {};",
    "popc.b64 {}, %rd1;", "popc.b32 %r1, {};", "shl.b64 %rd1, %rd1, {};", "bfe.u64 %rd1, %rd1, {}, %r2;",
    "atom.global.add.u32 {}, [%rd1], %r1;", "atom.global.add.f32 %f1, [%rd1], {};",
    "atom.global.cas.b64 %rd1, [%rd1], %rd2, {};",
    "fma.rn.f32 %f1, %f1, %f1, {};", "fma.rn.f16x2 %r1, %r1, %r1, {};",
    "cvt.rn.f16x2.f32 {}, %f1, %f2;", "testp.finite.f64 {}, %f64_1;", "testp.finite.f64 %p1, {};",
    "slct.u32.s32 %r1, %r1, %r2, {};", "shfl.sync.idx.b32 {}, %r1, 1, 31, -1;", "vote.sync.ballot.b32 {}, %p1, -1;",
    "shfl.sync.idx.b32 %r1, %r1, {}, 31, -1;", "shfl.sync.bfly.b32 %r1, %r1, 1, {}, -1;",
    "bfi.b32 %r1, %r2, %r3, {}, 8;",
    "prmt.b32 %r1, %r2, %r3, {};", "lop3.b32 %r1, %r2, %r3, {}, 0x96;", "shf.l.wrap.b32 %r1, %r2, %r3, {};",
    "bar.sync {};", "vote.sync.any.pred %p1, %p2, {};", "redux.sync.add.u32 %r1, {}, -1;",
    "dp4a.u32.u32 %r1, %r2, {}, %r3;",
    "szext.wrap.u32 %r1, %r2, {};", "mbarrier.init.shared.b64 [sh], {};", "match.any.sync.b32 %r1, %r2, {};",
    "div.rn.f32 %f1, %f2, {};", "rcp.rn.f64 {}, %f64_1;", "sad.u32 %r1, %r2, %r3, {};", "bfind.u32 {}, %r1;",
    "mad.lo.s32 %r1, %r2, %r3, {};", "mul24.lo.u32 %r1, {}, %r2;", "neg.f32 {}, %f1;", "abs.s16 %s16_1, {};",
    "max.u16x2 %r1, %r2, {};", "min.f16x2 %r1, %r2, {};", "copysign.f64 %f64_1, {}, %f64_2;",
    "vadd.u32.u32.u32 %r1, {}, %r2;", "cvt.pack.sat.u16.s32 %r1, %r2, {};", "red.global.add.f64 [%rd1], {};",
    "isspacep.global %p1, {};", "cvta.to.global.u64 %rd1, {};", "activemask.b32 {};", "brev.b32 {}, %r1;",
    "shfl.sync.idx.b32 %r1, %r1, 1, 31, {};", "vset.u32.s32.lt %r1, {}, %r2;", "vmad.u32.u32.u32 %r1, %r2, %r3, {};",
    "vadd2.u32.u32.u32 %r1, %r2, %r3, {};", "ld.global.v2.u32 {{{}, %r1}}, [%rd1];",
    "mbarrier.arrive.shared.b64 {}, [sh];",
]


def matrix_cases() -> list[str]:
    return [t.format(f"%{rt}_3") for t in MATRIX for rt in REGTYPES]


# ---------------------------------------------------------------- mutations of the golden kernels

_REGDECL = re.compile(r"^\s*\.reg\s+\.(\w+)\s+(%\w+)<(\d+)>;", re.M)


def _key_line(lines: list[str]) -> int | None:
    """The index of the instruction under test in a gpu-golden isa kernel: the one before the stores."""
    last_ld = max((i for i, ln in enumerate(lines) if ln.strip().startswith("ld.global")), default=None)
    if last_ld is None:
        return None
    for i in range(last_ld + 1, len(lines)):
        if lines[i].strip() and not lines[i].strip().startswith(("ld.", "st.", "//", "$", "bra", "@")):
            return i
    return None


_TC_OPS = {"mma", "wmma", "wgmma", "ldmatrix", "stmatrix", "movmatrix", "cp", "mbarrier", "fence"}


def _mutate(line: str, regs: dict[str, list[str]], rng: random.Random, vocab: list[str], types: list[str]) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    body = line.strip().rstrip(";")
    head, _, ops = body.partition(" ")
    parts = head.split(".")
    operands = [o.strip() for o in re.split(r",(?![^{]*})", ops)] if ops.strip() else []
    kind = rng.choice(["drop_mod", "add_mod", "swap_type", "add_op", "drop_op", "swap_reg", "swap_reg"])
    if kind == "drop_mod" and len(parts) > 2:
        del parts[rng.randrange(1, len(parts))]
    elif kind == "add_mod":
        parts.insert(rng.randrange(1, len(parts) + 1), rng.choice(vocab))
    elif kind == "swap_type":
        idx = [i for i, p in enumerate(parts) if p in types]
        if idx:
            parts[rng.choice(idx)] = rng.choice(types)
    elif kind == "add_op" and operands:
        operands.append(operands[-1])
    elif kind == "drop_op" and operands:
        operands.pop()
    else:
        idx = [i for i, o in enumerate(operands) if re.fullmatch(r"!?%\w+", o)]
        if idx:
            i = rng.choice(idx)
            rt = rng.choice(sorted(regs))
            operands[i] = regs[rt][0]
    return f"{indent}{'.'.join(parts)} {', '.join(operands)};".replace(" ;", ";")


def mutations(files: list[str], n: int, seed: int = 1) -> list[tuple[str, str, str]]:
    """(description, mutated line, mutated PTX text) for n random one-line mutations."""
    from ptxjit.isa import SPECS
    from ptxjit.isa.spec import TYPE_TOKENS

    vocab = sorted({v for sp in SPECS.values() for v in sp.modifiers})
    types = sorted(t for t in TYPE_TOKENS if t in {"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32",
                                                   "s64", "f16", "f32", "f64", "bf16", "f16x2", "pred", "u8",
                                                   "s8", "b8", "tf32", "bf16x2"})
    rng = random.Random(seed)
    out = []
    files = sorted(files)
    while len(out) < n and files:
        f = rng.choice(files)
        text = Path(f).read_text()
        lines = text.split("\n")
        tc = [i for i, ln in enumerate(lines) if ln.strip().lstrip("@!%p0123456789 ").split(".")[0] in _TC_OPS]
        k = rng.choice(tc) if tc else _key_line(lines)
        if k is None:
            continue
        regs: dict[str, list[str]] = {}
        for t, name, cnt in _REGDECL.findall(text):
            if int(cnt) > 1:
                regs[t] = [f"{name}1"]
        new = _mutate(lines[k], regs, rng, vocab, types)
        if new.strip() == lines[k].strip():
            continue
        out.append((f"{Path(f).name[:12]}:{k + 1}", new.strip(), "\n".join(lines[:k] + [new] + lines[k + 1:])))
    return out
