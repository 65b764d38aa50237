"""Write probes.ptx: one kernel per multiply-add shape, for learning ptxas's contraction rule.

regen.sh assembles it with ptxas (sm_90, default --fmad=true), disassembles with nvdisasm and records
per kernel how many FFMA/DFMA/HFMA2, FMUL/DMUL/HMUL2 and FADD/DADD/HADD2 the SASS has (expected.json).
tests/test_contract.py checks ptxjit's contraction decisions against those counts.
"""

HEADER = """.version 8.0
.target sm_90
.address_size 64
"""

PROLOGUE = """{
  .reg .f32 %f<24>; .reg .f64 %fd<12>; .reg .b16 %h<12>; .reg .b32 %r<12>; .reg .pred %p<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [q];
  ld.param.u32 %r1, [n];
  setp.gt.u32 %p1, %r1, 5;
  ld.global.f32 %f1, [%rd1]; ld.global.f32 %f2, [%rd1+4]; ld.global.f32 %f3, [%rd1+8];
  ld.global.f32 %f4, [%rd1+12];
  ld.global.f64 %fd1, [%rd1+16]; ld.global.f64 %fd2, [%rd1+24]; ld.global.f64 %fd3, [%rd1+32];
  ld.global.b16 %h1, [%rd1+40]; ld.global.b16 %h2, [%rd1+42]; ld.global.b16 %h3, [%rd1+44];
  ld.global.b32 %r5, [%rd1+48]; ld.global.b32 %r6, [%rd1+52]; ld.global.b32 %r7, [%rd1+56];
"""

# name: (body, stored register kind)
CASES = {
    "single_use": ("mul.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3;", "f"),
    "product_second": ("mul.f32 %f5, %f1, %f2; add.f32 %f7, %f3, %f5;", "f"),
    "also_stored": ("mul.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3; st.global.f32 [%rd2+4], %f5;", "f"),
    "sub_product_first": ("mul.f32 %f5, %f1, %f2; sub.f32 %f7, %f5, %f3;", "f"),
    "sub_product_second": ("mul.f32 %f5, %f1, %f2; sub.f32 %f7, %f3, %f5;", "f"),
    "mul_rn": ("mul.rn.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3;", "f"),
    "add_rn": ("mul.f32 %f5, %f1, %f2; add.rn.f32 %f7, %f5, %f3;", "f"),
    "add_rz": ("mul.f32 %f5, %f1, %f2; add.rz.f32 %f7, %f5, %f3;", "f"),
    "two_products": ("mul.f32 %f5, %f1, %f1; mul.f32 %f6, %f2, %f2; add.f32 %f7, %f5, %f6;", "f"),
    "two_products_sub": ("mul.f32 %f5, %f1, %f1; mul.f32 %f6, %f2, %f2; sub.f32 %f7, %f6, %f5;", "f"),
    "ftz_both": ("mul.ftz.f32 %f5, %f1, %f2; add.ftz.f32 %f7, %f5, %f3;", "f"),
    "ftz_mul_only": ("mul.ftz.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3;", "f"),
    "ftz_add_only": ("mul.f32 %f5, %f1, %f2; add.ftz.f32 %f7, %f5, %f3;", "f"),
    "sat_add": ("mul.f32 %f5, %f1, %f2; add.sat.f32 %f7, %f5, %f3;", "f"),
    "sat_mul": ("mul.sat.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3;", "f"),
    "two_adds": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; add.f32 %f8, %f5, %f4; add.f32 %f7, %f8, %f6;",
                 "f"),
    "neg_product": ("mul.f32 %f5, %f1, %f2; neg.f32 %f6, %f5; add.f32 %f7, %f6, %f3;", "f"),
    "neg_product_sub": ("mul.f32 %f5, %f1, %f2; neg.f32 %f6, %f5; sub.f32 %f7, %f6, %f4;", "f"),
    "neg_two_uses": ("mul.f32 %f5, %f1, %f2; neg.f32 %f6, %f5; add.f32 %f8, %f6, %f3; add.f32 %f7, %f8, %f6;",
                     "f"),
    "abs_product": ("mul.f32 %f5, %f1, %f2; abs.f32 %f6, %f5; add.f32 %f7, %f6, %f4;", "f"),
    "mov_between": ("mul.f32 %f5, %f1, %f2; mov.f32 %f6, %f5; add.f32 %f7, %f6, %f3;", "f"),
    "chain": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mul.f32 %f8, %f6, %f4; add.f32 %f7, %f8, %f1;", "f"),
    "product_twice": ("mul.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f5;", "f"),
    "product_minus_itself": ("mul.f32 %f5, %f1, %f2; sub.f32 %f7, %f5, %f5;", "f"),
    "redefined": ("mul.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3; mul.f32 %f5, %f5, %f4; add.f32 %f7, %f7, %f5;",
                  "f"),
    "selp_use": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; selp.f32 %f7, %f6, %f5, %p1;", "f"),
    "fma_use": ("mul.f32 %f5, %f1, %f2; fma.rn.f32 %f7, %f5, %f3, %f4;", "f"),
    "guarded_add": ("mul.f32 %f5, %f1, %f2; mov.f32 %f7, %f3; @%p1 add.f32 %f7, %f5, %f4;", "f"),
    "guarded_mul": ("mov.f32 %f5, %f3; @%p1 mul.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f4;", "f"),
    "other_block": ("mul.f32 %f5, %f1, %f2; mov.f32 %f7, %f4; @%p1 bra $L_end; add.f32 %f7, %f5, %f3;", "f"),
    "immediates": ("mul.f32 %f5, %f1, 0f40400000; add.f32 %f7, %f5, 0f3F800000;", "f"),
    "operand_redefined": ("mul.f32 %f5, %f1, %f2; add.f32 %f1, %f1, %f4; add.f32 %f7, %f5, %f1;", "f"),
    "f64": ("mul.f64 %fd5, %fd1, %fd2; add.f64 %fd7, %fd5, %fd3;", "d"),
    "f64_sub": ("mul.f64 %fd5, %fd1, %fd2; sub.f64 %fd7, %fd3, %fd5;", "d"),
    "f16": ("mul.f16 %h5, %h1, %h2; add.f16 %h7, %h5, %h3;", "h"),
    "f16_rn": ("mul.rn.f16 %h5, %h1, %h2; add.f16 %h7, %h5, %h3;", "h"),
    "bf16": ("mul.bf16 %h5, %h1, %h2; add.bf16 %h7, %h5, %h3;", "h"),
    "f16x2": ("mul.f16x2 %r8, %r5, %r6; add.f16x2 %r9, %r8, %r7;", "r"),
    # div.approx/full.f32 is a * MUFU.RCP(d) to ptxas (plus predicated scaling FMULs): the multiply fuses
    "div_full": ("div.full.f32 %f7, %f1, %f2;", "f"),
    "div_full_add": ("div.full.f32 %f5, %f1, %f2; add.f32 %f7, %f3, %f5;", "f"),
    "div_full_ftz_add": ("div.full.ftz.f32 %f5, %f1, %f2; add.ftz.f32 %f7, %f5, %f3;", "f"),
    "div_full_ftz_mismatch": ("div.full.f32 %f5, %f1, %f2; add.ftz.f32 %f7, %f5, %f3;", "f"),
    "div_approx_add": ("div.approx.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3;", "f"),
    "div_approx_ftz_sub": ("div.approx.ftz.f32 %f5, %f1, %f2; sub.ftz.f32 %f7, %f3, %f5;", "f"),
    "div_full_also_stored": ("div.full.f32 %f5, %f1, %f2; add.f32 %f7, %f5, %f3; st.global.f32 [%rd2+4], %f5;",
                             "f"),
    "div_full_neg": ("div.full.f32 %f5, %f1, %f2; neg.f32 %f6, %f5; add.f32 %f7, %f6, %f3;", "f"),
    "div_full_two_adds": ("div.full.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; add.f32 %f8, %f5, %f4; "
                          "add.f32 %f7, %f8, %f6;", "f"),
    "div_imm_add": ("div.full.f32 %f5, %f1, 0f40400000; add.f32 %f7, %f5, %f3;", "f"),  # FFMA by 1/3 folded
    "div_then_mul": ("div.full.f32 %f5, %f1, %f2; mul.f32 %f6, %f3, %f3; add.f32 %f7, %f5, %f6;", "f"),
}

STORE = {"f": "st.global.f32 [%rd2], %f7;", "d": "st.global.f64 [%rd2], %fd7;",
         "h": "st.global.b16 [%rd2], %h7;", "r": "st.global.b32 [%rd2], %r9;"}


def main() -> None:
    parts = [HEADER]
    for name, (body, kind) in CASES.items():
        parts.append(f".visible .entry {name}(.param .u64 p, .param .u64 q, .param .u32 n)\n")
        parts.append(PROLOGUE)
        parts.append("  " + body.replace("; ", ";\n  ") + "\n")
        parts.append(f"$L_end:\n  {STORE[kind]}\n  ret;\n}}\n\n")
    with open("probes.ptx", "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
