"""The instruction forms of the breadth check: PTX ISA 8.x instructions valid for sm_90/sm_90a.

Built from the PTX ISA 8.x instruction chapters (§9.7.1 integer ... §9.7.16 wgmma, §9.7.17 stack
manipulation), one entry per opcode and its main type/modifier forms: (name, body, block).  `body`
is the kernel's instruction text; its subject line (the form) is the single line, or the line that
starts with "> " when the form needs set-up lines (mbarrier.init before a wait, ...).  `block` is
the launch's block size: 1, or the warp (32) / warpgroup (128) that .sync/.aligned collectives need.
`handle` (texture and surface forms) describes the object the launch passes as the handle `%th`.

The kernel around every body (tools/breadth/gen.py) declares %p<8> (.pred), %h<16> (.b16),
%r<64> (.b32), %rd<16> (.b64), %f<64> (.f32), %fd<8> (.f64), %q<4> (.b128); %rd1 holds the global
address of the 4 KiB launch buffer, %r20/%rd4 the shared address of `sbuf` (4 KiB, 128-aligned),
%rd5 its generic address, %r0 is 0; `gvar` is a .global .u32, `cvar` a .const .u32, `lbuf` a .local array.
"""

from __future__ import annotations

FORMS: list[tuple[str, str, int, str]] = []

def f(name: str, body: str, block: int = 1, handle: str = "") -> None:
    FORMS.append((name, body.strip("\n"), block, handle))

# ---------------------------------------------------------------- §9.7.1 integer arithmetic
for t, d, a, b in (("s16", "%h4", "%h1", "%h2"), ("u32", "%r4", "%r1", "%r2"), ("s64", "%rd6", "%rd2", "%rd3")):
    f(f"add.{t}", f"add.{t} {d}, {a}, {b};")
    f(f"sub.{t}", f"sub.{t} {d}, {a}, {b};")
    f(f"mul.lo.{t}", f"mul.lo.{t} {d}, {a}, {b};")
    f(f"mad.lo.{t}", f"mad.lo.{t} {d}, {a}, {b}, {a};")
    f(f"div.{t}", f"div.{t} {d}, {a}, {b};")
    f(f"rem.{t}", f"rem.{t} {d}, {a}, {b};")
    f(f"min.{t}", f"min.{t} {d}, {a}, {b};")
    f(f"max.{t}", f"max.{t} {d}, {a}, {b};")
f("add.sat.s32", "add.sat.s32 %r4, %r1, %r2;")
f("sub.sat.s32", "sub.sat.s32 %r4, %r1, %r2;")
f("mul.hi.u32", "mul.hi.u32 %r4, %r1, %r2;")
f("mul.wide.s32", "mul.wide.s32 %rd6, %r1, %r2;")
f("mad.hi.sat.s32", "mad.hi.sat.s32 %r4, %r1, %r2, %r3;")
f("mad.wide.u32", "mad.wide.u32 %rd6, %r1, %r2, %rd2;")
f("mul24.lo.s32", "mul24.lo.s32 %r4, %r1, %r2;")
f("mul24.hi.u32", "mul24.hi.u32 %r4, %r1, %r2;")
f("mad24.lo.u32", "mad24.lo.u32 %r4, %r1, %r2, %r3;")
f("mad24.hi.sat.s32", "mad24.hi.sat.s32 %r4, %r1, %r2, %r3;")
f("sad.u32", "sad.u32 %r4, %r1, %r2, %r3;")
f("abs.s32", "abs.s32 %r4, %r1;")
f("neg.s64", "neg.s64 %rd6, %rd2;")
f("min.relu.s32", "min.relu.s32 %r4, %r1, %r2;")
f("max.s16x2", "max.s16x2 %r4, %r1, %r2;")
f("min.u16x2", "min.u16x2 %r4, %r1, %r2;")
f("add.s16x2", "add.s16x2 %r4, %r1, %r2;")
f("popc.b64", "popc.b64 %r4, %rd2;")
f("clz.b32", "clz.b32 %r4, %r1;")
f("bfind.shiftamt.u32", "bfind.shiftamt.u32 %r4, %r1;")
f("bfind.s64", "bfind.s64 %r4, %rd2;")
f("fns.b32", "fns.b32 %r4, %r1, %r2, 1;")
f("brev.b64", "brev.b64 %rd6, %rd2;")
f("bfe.u32", "bfe.u32 %r4, %r1, 2, 5;")
f("bfe.s64", "bfe.s64 %rd6, %rd2, %r1, %r2;")
f("bfi.b32", "bfi.b32 %r4, %r1, %r2, 3, 4;")
f("szext.clamp.s32", "szext.clamp.s32 %r4, %r1, %r2;")
f("szext.wrap.u32", "szext.wrap.u32 %r4, %r1, 7;")
f("bmsk.clamp.b32", "bmsk.clamp.b32 %r4, %r1, %r2;")
f("bmsk.wrap.b32", "bmsk.wrap.b32 %r4, %r1, %r2;")
f("dp4a.u32.s32", "dp4a.u32.s32 %r4, %r1, %r2, %r3;")
f("dp2a.lo.s32.u32", "dp2a.lo.s32.u32 %r4, %r1, %r2, %r3;")
f("dp2a.hi.u32.u32", "dp2a.hi.u32.u32 %r4, %r1, %r2, %r3;")
# §9.7.2 extended precision
f("add.cc.u32", "add.cc.u32 %r4, %r1, %r2;\naddc.u32 %r5, %r1, %r2;\n> addc.cc.u32 %r6, %r1, %r2;")
f("sub.cc.s64", "sub.cc.s64 %rd6, %rd2, %rd3;\n> subc.s64 %rd7, %rd2, %rd3;")
f("mad.lo.cc.u32", "mad.lo.cc.u32 %r4, %r1, %r2, %r3;\n> madc.hi.u32 %r5, %r1, %r2, %r3;")
f("madc.lo.cc.u64", "add.cc.u64 %rd6, %rd2, %rd3;\n> madc.lo.cc.u64 %rd7, %rd2, %rd3, %rd2;")

# ---------------------------------------------------------------- §9.7.3-4 floating point (f32, f64)
for t, d, a, b, c in (("f32", "%f4", "%f1", "%f2", "%f3"), ("f64", "%fd4", "%fd1", "%fd2", "%fd3")):
    f(f"add.rn.{t}", f"add.rn.{t} {d}, {a}, {b};")
    f(f"sub.rz.{t}", f"sub.rz.{t} {d}, {a}, {b};")
    f(f"mul.rm.{t}", f"mul.rm.{t} {d}, {a}, {b};")
    f(f"fma.rp.{t}", f"fma.rp.{t} {d}, {a}, {b}, {c};")
    f(f"mad.rn.{t}", f"mad.rn.{t} {d}, {a}, {b}, {c};")
    f(f"div.rn.{t}", f"div.rn.{t} {d}, {a}, {b};")
    f(f"abs.{t}", f"abs.{t} {d}, {a};")
    f(f"neg.{t}", f"neg.{t} {d}, {a};")
    f(f"min.{t}", f"min.{t} {d}, {a}, {b};")
    f(f"max.{t}", f"max.{t} {d}, {a}, {b};")
    f(f"rcp.rn.{t}", f"rcp.rn.{t} {d}, {a};")
    f(f"sqrt.rn.{t}", f"sqrt.rn.{t} {d}, {a};")
    f(f"testp.finite.{t}", f"testp.finite.{t} %p2, {a};")
    f(f"copysign.{t}", f"copysign.{t} {d}, {a}, {b};")
f("add.sat.ftz.f32", "add.rn.ftz.sat.f32 %f4, %f1, %f2;")
f("mul.ftz.f32", "mul.ftz.f32 %f4, %f1, %f2;")
f("fma.rn.sat.f32", "fma.rn.sat.f32 %f4, %f1, %f2, %f3;")
f("div.approx.f32", "div.approx.f32 %f4, %f1, %f2;")
f("div.full.f32", "div.full.ftz.f32 %f4, %f1, %f2;")
f("min.NaN.f32", "min.NaN.f32 %f4, %f1, %f2;")
f("max.xorsign.abs.f32", "max.xorsign.abs.f32 %f4, %f1, %f2;")
f("rcp.approx.ftz.f64", "rcp.approx.ftz.f64 %fd4, %fd1;")
f("rcp.approx.f32", "rcp.approx.f32 %f4, %f1;")
f("sqrt.approx.f32", "sqrt.approx.ftz.f32 %f4, %f1;")
f("rsqrt.approx.f32", "rsqrt.approx.f32 %f4, %f1;")
f("rsqrt.approx.ftz.f64", "rsqrt.approx.ftz.f64 %fd4, %fd1;")
f("sin.approx.f32", "sin.approx.ftz.f32 %f4, %f1;")
f("cos.approx.f32", "cos.approx.f32 %f4, %f1;")
f("lg2.approx.f32", "lg2.approx.ftz.f32 %f4, %f1;")
f("ex2.approx.f32", "ex2.approx.f32 %f4, %f1;")
f("tanh.approx.f32", "tanh.approx.f32 %f4, %f1;")
f("testp.subnormal.f32", "testp.subnormal.f32 %p2, %f1;")
f("testp.notanumber.f64", "testp.notanumber.f64 %p2, %fd1;")

# ---------------------------------------------------------------- §9.7.4 half precision
for t, d, a, b, c in (("f16", "%h4", "%h1", "%h2", "%h3"), ("bf16", "%h4", "%h1", "%h2", "%h3"),
                      ("f16x2", "%r4", "%r1", "%r2", "%r3"), ("bf16x2", "%r4", "%r1", "%r2", "%r3")):
    f(f"add.rn.{t}", f"add.rn.{t} {d}, {a}, {b};")
    f(f"sub.{t}", f"sub.{t} {d}, {a}, {b};")
    f(f"mul.rn.{t}", f"mul.rn.{t} {d}, {a}, {b};")
    f(f"fma.rn.{t}", f"fma.rn.{t} {d}, {a}, {b}, {c};")
    f(f"fma.rn.relu.{t}", f"fma.rn.relu.{t} {d}, {a}, {b}, {c};")
    f(f"neg.{t}", f"neg.{t} {d}, {a};")
    f(f"abs.{t}", f"abs.{t} {d}, {a};")
    f(f"min.{t}", f"min.{t} {d}, {a}, {b};")
    f(f"max.NaN.{t}", f"max.NaN.{t} {d}, {a}, {b};")
    f(f"ex2.approx.{t}", f"ex2.approx.{'ftz.' if t.startswith('bf') else ''}{t} {d}, {a};")
    f(f"tanh.approx.{t}", f"tanh.approx.{t} {d}, {a};")
f("fma.rn.sat.f16", "fma.rn.sat.f16 %h4, %h1, %h2, %h3;")
f("fma.rn.oob.f16", "fma.rn.oob.f16 %h4, %h1, %h2, %h3;")
f("fma.rn.oob.relu.bf16x2", "fma.rn.oob.relu.bf16x2 %r4, %r1, %r2, %r3;")
f("min.xorsign.abs.f16", "min.xorsign.abs.f16 %h4, %h1, %h2;")

# ---------------------------------------------------------------- §9.7.5-6 comparison, logic, shift
f("setp.lt.s32", "setp.lt.s32 %p2, %r1, %r2;")
f("setp.gtu.f32.and", "setp.gtu.and.f32 %p2|%p3, %f1, %f2, %p1;")
f("setp.eq.f16x2", "setp.eq.f16x2 %p2|%p3, %r1, %r2;")
f("setp.ne.bf16", "setp.ne.bf16 %p2, %h1, %h2;")
f("setp.num.f64", "setp.num.f64 %p2, %fd1, %fd2;")
f("set.le.u32.f32", "set.le.u32.f32 %r4, %f1, %f2;")
f("set.eq.f32.s32.or", "set.eq.or.f32.s32 %f4, %r1, %r2, %p1;")
f("set.lt.f16x2.f16x2", "set.lt.f16x2.f16x2 %r4, %r1, %r2;")
f("set.ge.u32.bf16x2", "set.ge.u32.bf16x2 %r4, %r1, %r2;")
f("selp.f64", "selp.f64 %fd4, %fd1, %fd2, %p1;")
f("selp.b16", "selp.b16 %h4, %h1, %h2, %p1;")
f("slct.f32.s32", "slct.f32.s32 %f4, %f1, %f2, %r1;")
f("slct.ftz.u64.f32", "slct.ftz.u64.f32 %rd6, %rd2, %rd3, %f1;")
f("and.pred", "and.pred %p2, %p1, %p1;")
f("or.b32", "or.b32 %r4, %r1, %r2;")
f("xor.b64", "xor.b64 %rd6, %rd2, %rd3;")
f("not.b16", "not.b16 %h4, %h1;")
f("cnot.b32", "cnot.b32 %r4, %r1;")
f("lop3.b32", "lop3.b32 %r4, %r1, %r2, %r3, 0x96;")
f("lop3.or.b32", "lop3.or.b32 %r4|%p2, %r1, %r2, %r3, 0x80, %p1;")
f("shf.l.wrap.b32", "shf.l.wrap.b32 %r4, %r1, %r2, %r3;")
f("shf.r.clamp.b32", "shf.r.clamp.b32 %r4, %r1, %r2, 5;")
f("shl.b64", "shl.b64 %rd6, %rd2, %r1;")
f("shr.s32", "shr.s32 %r4, %r1, 3;")
f("prmt.b32", "prmt.b32 %r4, %r1, %r2, %r3;")
f("prmt.b32.ecl", "prmt.b32.ecl %r4, %r1, %r2, %r3;")

# ---------------------------------------------------------------- §9.7.8 conversion
for spec in ("rn.f32.s32", "rni.s32.f32", "rzi.sat.u8.f64", "rn.f16.f32", "f32.f16", "rn.bf16.f32", "f32.bf16",
             "rn.f64.u64", "rz.f32.f64", "f64.f32", "s64.s8", "u16.u32", "sat.s8.s32", "rn.tf32.f32",
             "rn.f16x2.f32", "rn.relu.bf16x2.f32", "rn.satfinite.e4m3x2.f32",
             "rn.satfinite.e5m2x2.f32", "rn.f16x2.e4m3x2", "rn.f16x2.e5m2x2", "rn.satfinite.e4m3x2.f16x2",
             "rna.tf32.f32", "rpi.ftz.f32.f32", "rni.f32.f32"):
    parts = spec.split(".")
    dst, src = parts[-2], parts[-1]
    reg = {"f32": "%f", "f64": "%fd", "s32": "%r", "u32": "%r", "u8": "%h", "s8": "%h", "u16": "%h",
           "s64": "%rd", "u64": "%rd", "f16": "%h", "bf16": "%h", "tf32": "%r", "f16x2": "%r",
           "bf16x2": "%r", "e4m3x2": "%h", "e5m2x2": "%h"}
    dreg, sreg = reg[dst] + "4", reg[src] + "1"
    if dreg == "%h4" and dst in ("u8", "s8") and src == "f64":
        dreg = "%r4"
    if src in ("s8",):
        sreg = "%h1"
    srcs = sreg
    if dst in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2") and src == "f32":
        srcs = "%f1, %f2"
    f(f"cvt.{spec}", f"cvt.{spec} {dreg}, {srcs};")
f("cvt.pack.sat.u8.s32.b32", "cvt.pack.sat.u8.s32.b32 %r4, %r1, %r2, %r3;")
f("cvt.pack.sat.s16.s32", "cvt.pack.sat.s16.s32 %r4, %r1, %r2;")
f("cvta.to.shared.u64", "cvta.to.shared.u64 %rd6, %rd5;")
f("cvta.global.u64", "cvta.global.u64 %rd6, gvar;")
f("cvta.shared::cluster.u64", "cvta.shared::cluster.u64 %rd6, %rd4;")
f("isspacep.shared", "isspacep.shared %p2, %rd5;")
f("isspacep.shared::cluster", "isspacep.shared::cluster %p2, %rd5;")

# ---------------------------------------------------------------- §9.7.9 data movement
f("mov.u32.sreg", "mov.u32 %r4, %tid.x;")
f("mov.u64.clock64", "mov.u64 %rd6, %clock64;")
f("mov.u32.cluster_ctarank", "mov.u32 %r4, %cluster_ctarank;")
f("mov.b64.pack", "mov.b64 %rd6, {%r1, %r2};")
f("mov.b32.unpack", "mov.b32 {%h4, %h5}, %r1;")
f("mov.b128", "mov.b128 %q1, {%rd2, %rd3};")
f("mov.u64.sym", "mov.u64 %rd6, gvar;")
f("ld.global.u32", "ld.global.u32 %r4, [%rd1];")
f("ld.global.v4.f32", "ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd1];")
f("ld.shared.v2.u64", "ld.shared.v2.u64 {%rd6, %rd7}, [%r20];")
f("ld.const.u32", "ld.const.u32 %r4, [cvar];")
f("ld.local.b64", "ld.local.b64 %rd6, [lbuf];")
f("ld.param.u64", "ld.param.u64 %rd6, [p];")
f("ld.global.nc.v2.b32", "ld.global.nc.v2.b32 {%r4, %r5}, [%rd1];")
f("ld.global.L1::evict_last", "ld.global.L1::evict_last.L2::256B.u32 %r4, [%rd1];")
f("ld.acquire.gpu", "ld.acquire.gpu.global.u32 %r4, [%rd1];")
f("ld.relaxed.cluster", "ld.relaxed.cluster.shared::cta.u32 %r4, [%r20];")
f("ld.volatile.shared", "ld.volatile.shared.u16 %h4, [sbuf];")
f("ld.global.L2::cache_hint", "createpolicy.fractional.L2::evict_last.b64 %rd8, 1.0;\n"
  "> ld.global.L2::cache_hint.u32 %r4, [%rd1], %rd8;")
f("ld.shared::cluster.u32", "ld.shared::cluster.u32 %r4, [%r20];")
f("ld.b128", "ld.global.b128 %q1, [%rd1];")
f("ld.generic.s8", "ld.s8 %r4, [%rd1];")
f("ldu.global.f32", "ldu.global.f32 %f4, [%rd1];")
f("st.global.u32", "st.global.u32 [%rd1], %r1;")
f("st.shared.v4.b32", "st.shared.v4.b32 [sbuf], {%r1, %r2, %r3, %r4};")
f("st.local.f64", "st.local.f64 [lbuf], %fd1;")
f("st.release.sys", "st.release.sys.global.u32 [%rd1], %r1;")
f("st.volatile.global.u8", "st.volatile.global.u8 [%rd1+3], %h1;")
f("st.global.wt", "st.global.wt.u32 [%rd1], %r1;")
f("st.global.L1::no_allocate", "st.global.L1::no_allocate.b64 [%rd1], %rd2;")
f("st.b128", "st.global.b128 [%rd1], %q1;")
f("st.async.b32", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r20+16], %r1, [%r20];")
f("red.async.add.u32", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r20+16], %r1, [%r20];")
f("prefetch.global.L2", "prefetch.global.L2 [%rd1];")
f("prefetch.L1", "prefetch.L1 [%rd5];")
f("prefetch.global.L2::evict_last", "prefetch.global.L2::evict_last [%rd1];")
f("prefetch.tensormap", "prefetch.tensormap [%rd1];")
f("prefetchu.L1", "prefetchu.L1 [%rd1];")
f("applypriority", "applypriority.global.L2::evict_normal [%rd1], 128;")
f("discard.global.L2", "discard.global.L2 [%rd1], 128;")
f("createpolicy.fractional", "createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd6, 0.5;")
f("createpolicy.range", "createpolicy.range.global.L2::evict_last.L2::evict_first.b64 %rd6, [%rd1], 64, 128;")
f("createpolicy.cvt", "createpolicy.cvt.L2.b64 %rd6, %rd2;")
f("mapa.shared::cluster", "mapa.shared::cluster.u32 %r4, %r20, 0;")
f("mapa.u64", "mapa.u64 %rd6, %rd5, 0;")
f("getctarank.shared::cluster", "getctarank.shared::cluster.u32 %r4, %r20;")
f("getctarank.u64", "getctarank.u64 %r4, %rd5;")
f("shfl.sync.bfly.b32", "shfl.sync.bfly.b32 %r4|%p2, %r1, 1, 31, -1;", 32)
f("shfl.sync.idx.b32", "shfl.sync.idx.b32 %r4, %r1, 0, 31, -1;", 32)
f("tensormap.replace", "> tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;")
f("tensormap.cp_fenceproxy", "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
  "[%rd1], [%r20], 128;", 32)
f("multimem.ld_reduce", "multimem.ld_reduce.relaxed.sys.global.add.u32 %r4, [%rd1];")
f("multimem.st", "multimem.st.relaxed.sys.global.b32 [%rd1], %r1;")
f("multimem.red", "multimem.red.relaxed.sys.global.add.u32 [%rd1], %r1;")

# ---------------------------------------------------------------- §9.7.9.25 asynchronous copies
f("cp.async.ca.shared.global", "cp.async.ca.shared.global [%r20], [%rd1], 4;")
f("cp.async.cg.shared.global.zfill", "cp.async.cg.shared.global [%r20], [%rd1], 16, 8;")
f("cp.async.commit_group", "cp.async.commit_group;")
f("cp.async.wait_group", "cp.async.wait_group 0;")
f("cp.async.wait_all", "cp.async.wait_all;")
f("cp.async.mbarrier.arrive", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> cp.async.mbarrier.arrive.noinc.shared.b64 [%r20];")
f("cp.async.bulk.shared::cluster.global", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r20+128], [%rd1], 64, [%r20];")
f("cp.async.bulk.global.shared::cta", "cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r20], 64;")
f("cp.async.bulk.shared::cluster.shared::cta", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r20+128], [%r20+256], 64, [%r20];")
f("cp.reduce.async.bulk.add.u32", "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r20], 64;")
f("cp.async.bulk.prefetch.L2", "cp.async.bulk.prefetch.L2.global [%rd1], 64;")
f("cp.async.bulk.commit_group", "cp.async.bulk.commit_group;")
f("cp.async.bulk.wait_group", "cp.async.bulk.wait_group.read 0;")
f("cp.async.bulk.tensor.1d", "mbarrier.init.shared::cta.b64 [%r20], 1;\n"
  "> cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r20+128], "
  "[%rd1, {%r1}], [%r20];")
f("cp.async.bulk.tensor.2d.store", "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group "
  "[%rd1, {%r1, %r2}], [%r20];")
f("cp.reduce.async.bulk.tensor", "cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group "
  "[%rd1, {%r1}], [%r20];")
f("cp.async.bulk.prefetch.tensor", "cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%rd1, {%r1}];")

# ---------------------------------------------------------------- §9.7.10-11 texture and surface
# The handle comes from the kernel's second parameter `h` (%th; tools/breadth/gen.py) and the check
# passes a texture/surface object of the `handle` description: kind, geometry, channels x bits, kind.
f("tex.1d.v4.f32.s32", "tex.1d.v4.f32.s32 {%f4, %f5, %f6, %f7}, [%th, {%r1}];", handle="texture 1d 1x32 f")
f("tex.2d.v4.u32.f32", "tex.2d.v4.u32.f32 {%r4, %r5, %r6, %r7}, [%th, {%f1, %f2}];", handle="texture 2d 1x32 u")
f("tld4.r.2d.v4.f32.f32", "tld4.r.2d.v4.f32.f32 {%f4, %f5, %f6, %f7}, [%th, {%f1, %f2}];",
  handle="texture 2d 1x32 f")
f("txq.width.b32", "txq.width.b32 %r4, [%th];", handle="texture 2d 1x32 f")
f("suld.b.1d.b32.trap", "suld.b.1d.b32.trap {%r4}, [%th, {%r0}];", handle="surface 1d 1x32 u")
f("sust.b.2d.v2.b32.clamp", "sust.b.2d.v2.b32.clamp [%th, {%r0, %r1}], {%r4, %r5};", handle="surface 2d 2x32 u")
f("sured.b.add.1d.u32", "sured.b.add.1d.u32.trap [%th, {%r0}], %r4;", handle="surface 1d 1x32 u")
f("suq.width.b32", "suq.width.b32 %r4, [%th];", handle="surface 1d 1x32 u")
f("istypep.texref", "istypep.texref %p2, %rd2;")

# ---------------------------------------------------------------- §9.7.12 control flow
f("bra", "> @%p1 bra L1;\nL1:")
f("brx.idx", "mov.u32 %r9, 0;\nts: .branchtargets L2, L3;\n> brx.idx %r9, ts;\nL2:\nbra.uni L3;\nL3:")
f("call", "> call.uni (%r4), fn1, (%r1);")
f("ret", "ret.uni;")
f("exit", "exit;")

# ---------------------------------------------------------------- §9.7.13 parallel synchronization
f("bar.sync", "bar.sync 0;")
f("bar.sync.count", "bar.sync 1, 32;", 32)
f("bar.arrive", "bar.arrive 1, 32;", 32)
f("bar.red.popc.u32", "bar.red.popc.u32 %r4, 0, %p1;")
f("bar.red.and.pred", "bar.red.and.pred %p2, 0, %p1;")
f("barrier.sync", "barrier.sync 0;")
f("barrier.sync.aligned", "barrier.sync.aligned 0;")
f("barrier.arrive", "barrier.arrive 1, 32;", 32)
f("barrier.red.or.pred", "barrier.red.or.pred %p2, 0, %p1;")
f("bar.warp.sync", "bar.warp.sync -1;", 32)
f("barrier.cluster.arrive", "barrier.cluster.arrive;\n> barrier.cluster.wait;")
f("barrier.cluster.arrive.relaxed", "> barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;")
f("membar.gl", "membar.gl;")
f("membar.proxy.alias", "membar.proxy.alias;")
f("fence.sc.sys", "fence.sc.sys;")
f("fence.acq_rel.cluster", "fence.acq_rel.cluster;")
f("fence.proxy.async", "fence.proxy.async.shared::cta;")
f("fence.proxy.tensormap", "fence.proxy.tensormap::generic.release.gpu;")
f("fence.mbarrier_init", "fence.mbarrier_init.release.cluster;")
f("atom.global.add.u32", "atom.global.add.u32 %r4, [%rd1], %r1;")
f("atom.shared.cas.b64", "atom.shared.cas.b64 %rd6, [%r20], %rd2, %rd3;")
f("atom.acq_rel.gpu.exch.b32", "atom.acq_rel.gpu.global.exch.b32 %r4, [%rd1], %r1;")
f("atom.global.add.f32", "atom.global.add.f32 %f4, [%rd1], %f1;")
f("atom.add.f64", "atom.add.f64 %fd4, [%rd5], %fd1;")
f("atom.global.add.noftz.f16", "atom.global.add.noftz.f16 %h4, [%rd1], %h1;")
f("atom.global.v4.f32", "atom.global.v4.f32.add {%f4, %f5, %f6, %f7}, [%rd1], {%f1, %f2, %f3, %f1};")
f("atom.global.inc.u32", "atom.global.inc.u32 %r4, [%rd1], 9;")
f("atom.shared::cluster.max.s32", "atom.shared::cluster.max.s32 %r4, [%r20], %r1;")
f("atom.cas.b128", "atom.cas.b128 %q1, [%rd5], %q2, %q3;")
f("atom.exch.b128", "atom.global.exch.b128 %q1, [%rd1], %q2;")
f("atom.cas.b16", "atom.global.cas.b16 %h4, [%rd1], %h1, %h2;")
f("red.global.add.u64", "red.global.add.u64 [%rd1], %rd2;")
f("red.shared.min.s32", "red.shared.min.s32 [%r20], %r1;")
f("red.release.gpu.or.b32", "red.release.gpu.global.or.b32 [%rd1], %r1;")
f("red.global.add.noftz.bf16x2", "red.global.add.noftz.bf16x2 [%rd1], %r1;")
f("vote.sync.ballot.b32", "vote.sync.ballot.b32 %r4, %p1, -1;", 32)
f("vote.sync.all.pred", "vote.sync.all.pred %p2, %p1, -1;", 32)
f("vote.sync.uni.pred", "vote.sync.uni.pred %p2, !%p1, -1;", 32)
f("match.sync.any.b32", "match.sync.any.b32 %r4, %r1, -1;", 32)
f("match.sync.all.b64", "match.sync.all.b64 %r4|%p2, %rd2, -1;", 32)
f("activemask.b32", "activemask.b32 %r4;")
f("redux.sync.add.u32", "redux.sync.add.u32 %r4, %r1, -1;", 32)
f("redux.sync.min.s32", "redux.sync.min.s32 %r4, %r1, -1;", 32)
f("redux.sync.or.b32", "redux.sync.or.b32 %r4, %r1, -1;", 32)
f("griddepcontrol.launch_dependents", "griddepcontrol.launch_dependents;")
f("griddepcontrol.wait", "griddepcontrol.wait;")
f("elect.sync", "elect.sync %r4|%p2, -1;", 32)
f("mbarrier.init", "mbarrier.init.shared::cta.b64 [%r20], 1;")
f("mbarrier.inval", "mbarrier.init.shared.b64 [%r20], 1;\n> mbarrier.inval.shared.b64 [%r20];")
f("mbarrier.arrive", "mbarrier.init.shared.b64 [%r20], 2;\n> mbarrier.arrive.shared.b64 %rd6, [%r20];")
f("mbarrier.arrive.release.cluster", "mbarrier.init.shared.b64 [%r20], 2;\n"
  "> mbarrier.arrive.release.cluster.shared::cta.b64 %rd6, [%r20], 1;")
f("mbarrier.arrive.expect_tx", "mbarrier.init.shared.b64 [%r20], 2;\n"
  "> mbarrier.arrive.expect_tx.shared::cta.b64 %rd6, [%r20], 0;")
f("mbarrier.arrive_drop", "mbarrier.init.shared.b64 [%r20], 2;\n> mbarrier.arrive_drop.shared.b64 %rd6, [%r20];")
f("mbarrier.expect_tx", "mbarrier.init.shared.b64 [%r20], 1;\n"
  "> mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r20], 0;")
f("mbarrier.complete_tx", "mbarrier.init.shared.b64 [%r20], 1;\n"
  "> mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r20], 0;")
f("mbarrier.test_wait", "mbarrier.init.shared.b64 [%r20], 1;\nmbarrier.arrive.shared.b64 %rd6, [%r20];\n"
  "> mbarrier.test_wait.shared.b64 %p2, [%r20], %rd6;")
f("mbarrier.try_wait.parity", "mbarrier.init.shared.b64 [%r20], 1;\nmbarrier.arrive.shared.b64 %rd6, [%r20];\n"
  "> mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r20], 0;")
f("mbarrier.try_wait.acquire.cluster", "mbarrier.init.shared.b64 [%r20], 1;\n"
  "mbarrier.arrive.shared.b64 %rd6, [%r20];\n"
  "> mbarrier.try_wait.acquire.cluster.shared::cta.b64 %p2, [%r20], %rd6, 1000;")
f("mbarrier.pending_count", "mbarrier.pending_count.b64 %r4, %rd2;")

# ---------------------------------------------------------------- §9.7.14-16 warp-level and warpgroup matrix
f("mma.sync.m16n8k16.f32.f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f8};", 32)
f("mma.sync.m16n8k8.bf16", "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2}, {%r5}, {%f1, %f2, %f3, %f8};", 32)
f("mma.sync.m16n8k8.tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f8};", 32)
f("mma.sync.m8n8k4.f64", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd4, %fd5}, {%fd1}, {%fd2}, "
  "{%fd3, %fd6};", 32)
f("mma.sync.m16n8k32.s8", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%r10, %r11, %r12, %r13}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r7, %r8, %r9, %r14};", 32)
f("mma.sync.m16n8k32.e4m3", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f8};", 32)
f("mma.sync.m16n8k256.b1", "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%r10, %r11, %r12, %r13}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r7, %r8, %r9, %r14};", 32)
f("mma.sp.sync.m16n8k32.f16", "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%f1, %f2, %f3, %f8}, %r9, 0x0;", 32)
f("wmma.load.a.f16", "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, "
  "[%rd1];", 32)
f("wmma.mma.f32.f16", "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11}, "
  "{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, "
  "{%f12, %f13, %f14, %f15, %f16, %f17, %f18, %f19};", 32)
f("wmma.store.d.f32", "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], "
  "{%f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11};", 32)
f("wmma.load.c.f32", "wmma.load.c.sync.aligned.col.m16n16k16.shared.f32 "
  "{%f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11}, [%r20], 16;", 32)
f("ldmatrix.x4", "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r4, %r5, %r6, %r7}, [%r20];", 32)
f("ldmatrix.x2.trans", "ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%r4, %r5}, [%r20];", 32)
f("stmatrix.x1", "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r20], {%r1};", 32)
f("movmatrix.trans", "movmatrix.sync.aligned.m8n8.trans.b16 %r4, %r1;", 32)
f("wgmma.fence", "wgmma.fence.sync.aligned;", 128)
f("wgmma.commit_group", "wgmma.commit_group.sync.aligned;", 128)
f("wgmma.wait_group", "wgmma.wait_group.sync.aligned 0;", 128)
f("wgmma.mma_async.f16.ss", "> wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f4, %f5, %f6, %f7}, %rd2, %rd3, "
  "1, 1, 1, 0, 0;", 128)
f("wgmma.mma_async.bf16.rs", "> wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f4, %f5, %f6, %f7}, "
  "{%r1, %r2, %r3, %r4}, %rd3, 1, 1, 1, 0;", 128)
f("wgmma.mma_async.s8", "> wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%r4, %r5, %r6, %r7}, %rd2, %rd3, 1;", 128)
f("wgmma.mma_async.e4m3", "> wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f4, %f5, %f6, %f7}, %rd2, %rd3, "
  "1, 1, 1;", 128)
f("wgmma.mma_async.sp", "> wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f4, %f5, %f6, %f7}, %rd2, %rd3, "
  "%r1, 0, 1, 1, 1, 0, 0;", 128)

# ---------------------------------------------------------------- §9.7.17-19 stack, video, misc
f("alloca.u64", "alloca.u64 %rd6, 64;")
f("alloca.u32.align", "alloca.u32 %r4, %r1, 16;")
f("stacksave.u64", "stacksave.u64 %rd6;")
f("stackrestore.u64", "stacksave.u64 %rd6;\n> stackrestore.u64 %rd6;")
for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
    f(f"{op}.s32.u32.s32.sat", f"{op}.s32.u32.s32.sat %r4, %r1.b0, %r2.h1;")
    f(f"{op}.u32.u32.u32.add", f"{op}.u32.u32.u32.add %r4, %r1, %r2, %r3;")
f("vshl.u32.u32.u32.clamp", "vshl.u32.u32.u32.clamp %r4, %r1, %r2;")
f("vshr.s32.s32.u32.wrap.max", "vshr.s32.s32.u32.wrap.max %r4, %r1, %r2, %r3;")
f("vmad.s32.s32.u32", "vmad.s32.s32.u32.sat %r4, %r1.h0, %r2.h1, %r3;")
f("vset.s32.u32.lt", "vset.s32.u32.lt %r4, %r1, %r2;")
f("vset.u32.u32.ne.add", "vset.u32.u32.ne.add %r4, %r1, %r2, %r3;")
for op in ("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2"):
    f(f"{op}.s32.s32.s32", f"{op}.s32.s32.s32.sat %r4, %r1, %r2, %r3;")
for op in ("vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4"):
    f(f"{op}.u32.u32.u32.add", f"{op}.u32.u32.u32.add %r4, %r1, %r2, %r3;")
f("vset2.u32.u32.eq", "vset2.u32.u32.eq %r4, %r1, %r2, %r3;")
f("vset4.s32.s32.gt.add", "vset4.s32.s32.gt.add %r4, %r1, %r2, %r3;")
f("brkpt", "@!%p1 brkpt;")
f("nanosleep.u32", "nanosleep.u32 10;")
f("pmevent", "pmevent 1;")
f("pmevent.mask", "pmevent.mask 0x3;")
f("trap", "@!%p1 trap;")
f("setmaxnreg.inc", "setmaxnreg.inc.sync.aligned.u32 240;", 128)
f("setmaxnreg.dec", "setmaxnreg.dec.sync.aligned.u32 40;", 128)

# ---------------------------------------------------------------- more forms of the chapters above
f("shfl.sync.up.b32", "shfl.sync.up.b32 %r4, %r1, 1, 0, -1;", 32)
f("shfl.sync.down.b32", "shfl.sync.down.b32 %r4|%p2, %r1, 2, 31, -1;", 32)
f("vote.sync.any.pred", "vote.sync.any.pred %p2, %p1, -1;", 32)
f("match.sync.any.b64", "match.sync.any.b64 %r4, %rd2, -1;", 32)
f("cvta.param.u64", "cvta.param.u64 %rd6, p;")
f("isspacep.global", "isspacep.global %p2, %rd1;")
f("mov.u32.nsmid", "mov.u32 %r4, %nsmid;")
f("mov.u32.lanemask_lt", "mov.u32 %r4, %lanemask_lt;")
f("mov.u64.globaltimer", "mov.u64 %rd6, %globaltimer;")
f("mov.u32.dynamic_smem_size", "mov.u32 %r4, %dynamic_smem_size;")
f("mov.u32.clusterid", "mov.u32 %r4, %clusterid.x;")
f("mov.pred.is_explicit_cluster", "mov.pred %p2, %is_explicit_cluster;")
f("mov.u32.pm0", "mov.u32 %r4, %pm0;")
f("cvt.u64.u32.sreg", "cvt.u64.u32 %rd6, %ctaid.x;")
f("mbarrier.arrive.noComplete", "mbarrier.init.shared.b64 [%r20], 3;\n"
  "> mbarrier.arrive.noComplete.shared.b64 %rd6, [%r20], 1;")
f("cp.async.bulk.multicast", "mbarrier.init.shared::cta.b64 [%r20], 1;\nmov.u16 %h5, 1;\n"
  "> cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r20+128], [%rd1], 64, "
  "[%r20], %h5;")
f("cp.async.bulk.tensor.3d.im2col", "mbarrier.init.shared::cta.b64 [%r20], 1;\nmov.u16 %h5, 0;\n"
  "> cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r20+128], "
  "[%rd1, {%r1, %r2, %r0}], [%r20], {%h5};")
f("call.indirect", "mov.u64 %rd8, fn1;\nproto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
  "> call (%r4), %rd8, (%r1), proto;")
f("prmt.b32.f4e", "prmt.b32.f4e %r4, %r1, %r2, %r3;")
f("fma.rn.ftz.sat.f16x2", "fma.rn.ftz.sat.f16x2 %r4, %r1, %r2, %r3;")
f("ld.param::entry", "ld.param::entry.u64 %rd6, [p];")
f("mul.hi.s64", "mul.hi.s64 %rd6, %rd2, %rd3;")
f("mad.wide.s16", "mad.wide.s16 %r4, %h1, %h2, %r1;")
f("cvt.rna.satfinite.tf32.f32", "cvt.rna.satfinite.tf32.f32 %r4, %f1;")
f("cvt.rz.f16.f32", "cvt.rz.f16.f32 %h4, %f1;")
f("cvt.rn.satfinite.relu.f16x2.f32", "cvt.rn.satfinite.relu.f16x2.f32 %r4, %f1, %f2;")
f("cvt.rn.bf16.f64", "cvt.rn.bf16.f64 %h4, %fd1;")
f("cvt.f32.bf16.ftz", "cvt.ftz.f32.bf16 %f4, %h1;")
f("fence.acquire.sync_restrict", "fence.acquire.sync_restrict::shared::cluster.cluster;")
f("fence.proxy.async::generic", "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;")
f("fence.proxy.async.global", "fence.proxy.async.global;")
f("membar.cta", "membar.cta;")
f("mbarrier.arrive.relaxed.cta", "mbarrier.init.shared.b64 [%r20], 2;\n"
  "> mbarrier.arrive.relaxed.cta.shared::cta.b64 %rd6, [%r20];")
f("ld.global.nc.L2::cache_hint", "mov.b64 %rd8, 0;\n> ld.global.nc.L2::cache_hint.v4.u32 {%r4, %r5, %r6, %r7}, "
  "[%rd1], %rd8;")
f("st.global.L2::cache_hint", "mov.b64 %rd8, 0;\n> st.global.L2::cache_hint.u32 [%rd1], %r1, %rd8;")
f("atom.global.L2::cache_hint", "mov.b64 %rd8, 0;\n> atom.global.L2::cache_hint.add.u32 %r4, [%rd1], %r1, %rd8;")
f("atom.global.v2.f16x2", "atom.global.v2.f16x2.add.noftz {%r4, %r5}, [%rd1], {%r1, %r2};")
f("atom.global.max.bf16x2", "atom.global.v2.bf16x2.max.noftz {%r4, %r5}, [%rd1], {%r1, %r2};")
f("red.global.v4.f32", "red.global.v4.f32.add [%rd1], {%f1, %f2, %f3, %f1};")
f("atom.sys.cas.b32", "atom.relaxed.sys.global.cas.b32 %r4, [%rd1], %r1, %r2;")
f("atom.dec.u32", "atom.shared.dec.u32 %r4, [%r20], 5;")
f("ld.weak.shared::cta", "ld.weak.shared::cta.v4.u16 {%h4, %h5, %h6, %h7}, [%r20];")
f("ld.global.v2.f64", "ld.global.v2.f64 {%fd4, %fd5}, [%rd1];")
f("ld.global.cs", "ld.global.cs.s16 %h4, [%rd1];")
f("st.volatile.shared.v2.f32", "st.volatile.shared.v2.f32 [%r20], {%f1, %f2};")
f("mov.pred", "mov.pred %p2, %p1;")
f("mov.f64.imm", "mov.f64 %fd4, 0d400921FB54442D18;")
f("selp.pred.via.setp", "setp.ne.and.b32 %p2, %r1, 0, %p1;\n> selp.s32 %r4, 1, -1, %p2;")
f("setp.eq.u16", "setp.eq.u16 %p2, %h1, %h2;")
f("set.gt.u32.s64", "set.gt.u32.s64 %r4, %rd2, %rd3;")
f("testp.infinite.f32", "testp.infinite.f32 %p2, %f1;")
f("abs.ftz.f32", "abs.ftz.f32 %f4, %f1;")
f("sqrt.rz.ftz.f32", "sqrt.rz.ftz.f32 %f4, %f1;")
f("rcp.rm.f64", "rcp.rm.f64 %fd4, %fd1;")
f("div.rp.ftz.f32", "div.rp.ftz.f32 %f4, %f1, %f2;")
f("ex2.approx.ftz.f32", "ex2.approx.ftz.f32 %f4, %f1;")
f("lg2.approx.nonftz.f32", "lg2.approx.f32 %f4, %f1;")
f("dp4a.s32.s32", "dp4a.s32.s32 %r4, %r1, %r2, %r3;")
f("bfe.u64", "bfe.u64 %rd6, %rd2, 3, 9;")
f("bfi.b64", "bfi.b64 %rd6, %rd2, %rd3, 4, 12;")
f("shf.l.clamp.b32", "shf.l.clamp.b32 %r4, %r1, %r2, 40;")
f("clz.b64", "clz.b64 %r4, %rd2;")
f("popc.b32", "popc.b32 %r4, %r1;")
f("brev.b32", "brev.b32 %r4, %r1;")

f("div.u16", "div.u16 %h4, %h1, %h2;")
f("cvt.sat.u8.s16", "cvt.sat.u8.s16 %h4, %h1;")
f("cvt.s32.s8", "cvt.s32.s8 %r4, %r1;")
f("redux.sync.max.u32", "redux.sync.max.u32 %r4, %r1, -1;", 32)
f("redux.sync.xor.b32", "redux.sync.xor.b32 %r4, %r1, -1;", 32)
f("vote.sync.ballot.partial", "vote.sync.ballot.b32 %r4, %p1, 0xffff;", 16)
f("shfl.sync.idx.partial", "shfl.sync.idx.b32 %r4, %r1, 3, 0x1f, 0xffff;", 16)
f("bar.warp.sync.partial", "bar.warp.sync 0xff;", 8)
f("barrier.sync.aligned.count", "barrier.sync.aligned 0, 64;", 64)
f("bar.red.or.pred.count", "bar.red.or.pred %p2, 1, 64, %p1;", 64)
