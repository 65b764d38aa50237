"""sm_90 forms the breadth check used to refuse (issue 15): %pm performance counters, multimem on one device,
mapa.shared::cluster, cp.async.bulk multicast, sured, tensormap.replace / cp_fenceproxy.  Each against a
NumPy model of what the PTX ISA says the instruction does."""

from __future__ import annotations

import numpy as np

import ptxjit

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _run(body: str, out: np.ndarray, block: int = 1, params: str = ".param .u64 p", args: list | None = None,
         decls: str = "", **kw) -> np.ndarray:
    src = f"""{HEAD}{decls}
.visible .entry k({params})
{{
  .reg .pred %p<8>;
  .reg .b16 %h<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .f32 %f<32>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r0, %tid.x;
{body}
  ret;
}}
"""
    ptxjit.Module(src, "sm90_forms.ptx").get_function("k")(kw.pop("grid", 1), block, args or [out], **kw)
    return out


def test_pm_counters_are_monotone() -> None:
    """%pm0..%pm7 (32-bit) and %pm0_64.. (64-bit): performance-monitor counts; ptxjit counts cycles, so a
    later read is not smaller (the 32-bit one modulo 2^32)."""
    body = "\n".join([
        "  mov.u32 %r1, %pm0;", "  mov.u64 %rd2, %pm3_64;",
        "  mov.u32 %r3, 0;", "LOOP:", "  add.u32 %r3, %r3, 1;", "  setp.lt.u32 %p1, %r3, 1000;", "  @%p1 bra LOOP;",
        "  mov.u32 %r2, %pm0;", "  mov.u64 %rd3, %pm3_64;", "  mov.u32 %r4, %pm7;",
        "  st.global.u32 [%rd1], %r1;", "  st.global.u32 [%rd1+4], %r2;", "  st.global.u64 [%rd1+8], %rd2;",
        "  st.global.u64 [%rd1+16], %rd3;", "  st.global.u32 [%rd1+24], %r4;"])
    out = _run(body, np.zeros(8, np.uint32))
    pm0, pm0b = int(out[0]), int(out[1])
    pm3, pm3b = int(out[2]) | int(out[3]) << 32, int(out[4]) | int(out[5]) << 32
    assert 0 < (pm0b - pm0) % 2**32 < 2**31
    assert pm3b > pm3 > 0


def test_multimem_on_one_device_is_plain_memory() -> None:
    """With one device a multicast object has one copy: ld_reduce reads it, st writes it, red reduces into
    it atomically (64 threads adding their tid + 1; a v4.f32 red from each thread)."""
    body = """
  ld.global.u32 %r1, [%rd1];
  multimem.ld_reduce.relaxed.sys.global.add.u32 %r2, [%rd1];
  multimem.ld_reduce.weak.global.min.s32 %r3, [%rd1+4];
  bar.sync 0;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 st.global.u32 [%rd1+8], %r2;
  @%p1 st.global.u32 [%rd1+12], %r3;
  @%p1 multimem.st.relaxed.sys.global.b32 [%rd1+16], %r1;
  @%p1 multimem.st.global.v2.f16x2 [%rd1+24], {%r1, %r3};
  add.u32 %r4, %r0, 1;
  multimem.red.relaxed.sys.global.add.u32 [%rd1+32], %r4;
  cvt.rn.f32.u32 %f1, %r4;
  multimem.red.relaxed.gpu.global.add.v4.f32 [%rd1+48], {%f1, %f1, %f1, %f1};
"""
    buf = np.zeros(16, np.uint32)
    buf[0], buf[1], buf[8] = 0x12345678, 0xFFFFFFF0, 1000
    buf[12:16] = np.float32(0.5).view(np.uint32)
    out = _run(body, buf.copy(), block=64)
    assert out[2] == 0x12345678 and out[3] == 0xFFFFFFF0  # ld_reduce of one copy: its value
    assert out[4] == 0x12345678  # st
    assert list(out[6:8]) == [0x12345678, 0xFFFFFFF0]  # v2.f16x2 st: the bits
    assert out[8] == 1000 + sum(range(1, 65))  # red.add
    np.testing.assert_array_equal(out[12:16].view(np.float32), np.float32(0.5 + sum(range(1, 65))))


def test_multimem_ld_reduce_v8_reads_the_bits() -> None:
    """A vector ld_reduce of packed halves (.acc::f32 changes how copies are added: one copy, nothing added)."""
    regs = ",".join(f"%r{i}" for i in range(1, 9))
    body = (f"  multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v8.f16x2 {{{regs}}}, [%rd1];\n"
            + "\n".join(f"  st.global.b32 [%rd1+{32 + 4 * i}], %r{i + 1};" for i in range(8)))
    buf = np.zeros(16, np.uint32)
    buf[:8] = np.arange(8, dtype=np.uint32) * 0x01010101 + 0x3C003C00
    out = _run(body, buf.copy())
    np.testing.assert_array_equal(out[8:], buf[:8])
