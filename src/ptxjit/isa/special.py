"""The special registers (%tid, %ctaid, %laneid, %clock64, ...): their names, types and forms as ptxas
takes them, and which of them ptxjit implements (lower/special.py reads each one)."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.spec import bits

# The special registers of PTX ISA 9.x (§10) as ptxas (CUDA 13, sm_90) takes them: sources of mov and
# cvt only.  Vector registers take a component (.x .y .z .w), the others none.
_SREG_VECTORS = frozenset({"%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
                           "%cluster_nctaid"})
_SREG_TYPES: dict[str, str] = {
    **{r: "u32" for r in _SREG_VECTORS},
    **{f"%{r}": "u32" for r in (
        "laneid", "warpid", "nwarpid", "smid", "nsmid", "clock", "clock_hi", "globaltimer_lo", "globaltimer_hi",
        "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt", "total_smem_size",
        "aggr_smem_size", "dynamic_smem_size", "cluster_ctarank", "cluster_nctarank",
        "reserved_smem_offset_begin", "reserved_smem_offset_end", "reserved_smem_offset_cap",
        "reserved_smem_offset_0", "reserved_smem_offset_1")},
    **{f"%pm{i}": "u32" for i in range(8)},
    **{f"%pm{i}_64": "u64" for i in range(8)},
    **{f"%envreg{i}": "u32" for i in range(32)},
    "%clock64": "u64", "%globaltimer": "u64", "%gridid": "u64", "%current_graph_exec": "u64",
    "%is_explicit_cluster": "pred",
}
# mov widths ptxas takes besides the register's own: the 16-bit forms of the registers that were 16-bit
# in PTX 1.x, and %gridid's 16- and 32-bit forms (32-bit before PTX 3.0)
_SREG_MOV_BITS = {"%tid": (16, 32), "%ntid": (16, 32), "%ctaid": (16, 32), "%nctaid": (16, 32),
                  "%gridid": (16, 32, 64)}


def special_type(name: str) -> str | None:
    """The type of a special register, or None if `name` is not one."""
    base, dot, comp = name.partition(".")
    t = _SREG_TYPES.get(base)
    if t is None or (comp in ("x", "y", "z", "w") if base in _SREG_VECTORS else not dot):
        return t
    return None


def special_form_error(name: str) -> str | None:
    """Why `name`, which names a special register, is not a valid reference to it (None: it is, or it
    names none)."""
    base, dot, comp = name.partition(".")
    if base not in _SREG_TYPES or special_type(name) is not None:
        return None
    if base in _SREG_VECTORS:
        if not dot:
            return f"{base} is a vector special register: name a component ({base}.x, .y, .z or .w)"
        return f"{name}: {base} has the components .x, .y, .z and .w, not .{comp}"
    return f"{name}: the special register {base} has no components"


def special_misfit(name: str, st: str, cls: str | None, mov: bool = False) -> str | None:
    """Why special register `name` (type `st`) cannot be read as .`cls`, or None.  ptxas: a predicate
    register moves only to a predicate; cvt takes a source type of at most the register's width, mov
    (`mov`) the register's own width (and the _SREG_MOV_BITS forms)."""
    if cls is None or cls == "any":
        return None
    if st == "pred" or cls == "pred":
        return None if st == cls else f"reads as .{st} only"
    n = bits(cls)
    if mov:
        ok = _SREG_MOV_BITS.get(name.split(".")[0], (bits(st),))
        return None if n in ok else "moves as " + " or ".join(f".b{w}/.u{w}/.s{w}" for w in ok)
    return None if n <= bits(st) else f"is {bits(st)}-bit: it converts from an integer type of at most {bits(st)} bits"


def unsupported_special(ins: ir.Instr) -> str | None:
    """Why a mov/cvt reading a special register ptxjit does not implement is refused, or None."""
    for x in ins.operands[1:]:
        if isinstance(x, ir.Reg) and special_type(x.name) is not None and not is_special(x.name):
            return f"special register {x.name} is not supported"
    return None


# the special registers ptxjit reads (lower/special.py); the others of the table are refused at load
# (unsupported_special)
SPECIAL_REGS = {
    "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
    "%gridid", "%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
    "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge",
    "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%warpsize", "%current_graph_exec",
    # the shared memory reserved for CUDA's system software (lower/layout.py: RESERVED_SMEM_BYTES)
    "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
    "%reserved_smem_offset_0", "%reserved_smem_offset_1",
    # thread-block clusters (lower/rules/cluster.py)
    "%cluster_ctarank", "%cluster_nctarank", "%cluster_ctaid", "%cluster_nctaid", "%clusterid", "%nclusterid",
    "%is_explicit_cluster",
    *(f"%pm{i}{w}" for i in range(8) for w in ("", "_64")),  # performance monitors (lower/special.py)
    *(f"%envreg{i}" for i in range(32)),  # driver-defined (lower/special.py); ptxas knows %envreg0..31
}


def is_special(name: str) -> bool:
    """Whether `name` (%tid.x, %clock64, ...) is a special register ptxjit implements."""
    return name.split(".")[0] in SPECIAL_REGS
