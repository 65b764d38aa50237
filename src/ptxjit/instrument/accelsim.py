"""Accel-Sim trace export: `kernelslist.g` and `kernel-1.traceg`, the files Accel-Sim's trace-driven
simulator reads (the NVBit tracer's output after its post-processing step, "accelsim tracer version 4").

    t = ptxjit.trace(kernel, grid, block, args, records=("blocks", "memory"))
    t.to_accelsim("traces/")   # traces/kernelslist.g, traces/kernel-1.traceg

The .traceg file is a header (`-key = value` lines), a format comment, then per thread block
(`#BEGIN_TB`, `thread block = x,y,z`) per warp (`warp = n`, `insts = N`) one line per warp-level
instruction:

    PC mask dest_num [R..] OPCODE src_num [R..] mem_width [mode addresses]

PC is hex (the instruction's index in the kernel x 16, SASS's instruction size), the active mask 8 hex
digits, registers `R<n>`, mem_width the bytes per thread (0: not a memory instruction), and the addresses
of the active lanes in lane order: mode 1 `0xBASE STRIDE` (a contiguous run of lanes at a constant stride),
mode 2 `0xBASE DELTA...` (popcount - 1 signed deltas, each from the previous active lane), mode 0 a list
of every active lane's address (compress=False, and memory instructions no lane executed).

How a PTX trace becomes warp instructions (a CPU run has no warps: they are reconstructed):

* Warp streams come from the "blocks" records.  Thread t of a CTA is lane t % 32 of warp t // 32 (the
  linear thread index, as CUDA forms warps).  The k-th execution of block B by a thread is the *instance*
  (B, k); the lanes that share an instance execute it together.  A warp's instances are ordered by merging
  its threads' sequences: an instance is issued once all its lanes have reached it (the lowest-PC one
  first, which is where divergent paths reconverge); where none is ready (threads took the same blocks in
  different orders) the lowest-PC one goes with the lanes at it, the others issue it later.
* Every instruction of an instance is a line with the instance's mask: guarded instructions included
  (the guard's value is not recorded), except memory instructions, whose mask is the lanes whose memory
  record exists in that instance (a guarded access appears with mask 0 where no lane's guard held).
  A memory record belongs to the last execution of its basic block by the same thread before it.
* Registers: each GPR name of the kernel is numbered R0, R1, ... in order of first appearance by PC
  (R255, SASS's zero register, is skipped); predicates, special registers and immediates are not
  listed, as the NVBit tracer lists only vector registers.  At most 1 destination (a vector's first
  register, as SASS names a register quad by its first) and 4 sources (the format's limits).
* Opcodes: one SASS-style opcode per PTX instruction from Accel-Sim's Ampere table (sm_80:
  "-binary version = 80"), its main instruction where SASS needs several (div.f32 -> MUFU.RCP).  Memory
  opcodes carry the access width the simulator reads from them (LDG.E.64, STS.U8, LDG.E.128).  Constant
  and kernel-parameter loads are LDC without addresses (Accel-Sim models constant loads as ALU ops).
  A PTX opcode with no counterpart becomes NOP (FALLBACK_OPCODE), keeping its registers.

Approximations: a block that calls a device function is issued whole before the callee's blocks; generic
addresses are host addresses, and the header's shared/local windows lie above user space so that the
simulator takes generic accesses as global; "-shmem" is the shared bytes the trace touched (a lower bound
of the kernel's allocation); "-nregs" is the 32-bit slots of the numbered registers, capped at 255 and at
what lets one CTA fit Ampere's 64K-register file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ptxjit.frontend import ir

TRACER_VERSION = 4
BINARY_VERSION = 80  # Ampere (A100): the opcode table the names below come from
WARP = 32
MAX_DST, MAX_SRC = 1, 4
FALLBACK_OPCODE = "NOP"
RZ = 255  # SASS's zero register: never a numbered register
# Above every x86-64/AArch64 user-space address: the simulator's shared window [SHMEM_BASE, LOCAL_BASE) and
# local window [LOCAL_BASE, + its maximum) hold no host address, so generic (LD/ST) accesses count as global.
SHMEM_BASE = 0x0000_8000_0000_0000
LOCAL_BASE = 0x0000_8001_0000_0000
FORMAT_LINE = ("#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
               "[adrrescompress?] [mem_addresses]")

SPECIAL_REG = re.compile(r"%(tid|ntid|ctaid|nctaid|laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock64|clock_hi"
                         r"|lanemask_\w+|globaltimer\w*|envreg\d+|pm\d+\w*|\w*smem_size|cluster\w*|nclusterid"
                         r"|is_explicit_cluster|current_graph_exec|reserved_smem\w*)(\.[xyz])?$")
S2R_SOURCES = ("%tid", "%ctaid", "%laneid", "%warpid", "%smid", "%lanemask", "%gridid", "%cluster")
# opcodes whose first operand is not a destination
NO_DEST = frozenset({"st", "red", "bar", "barrier", "bra", "brx", "ret", "exit", "membar", "fence", "trap", "cp",
                     "prefetch", "prefetchu", "call", "brkpt", "nanosleep", "pmevent", "stmatrix", "sust", "sured",
                     "cp.async", "griddepcontrol", "setmaxnreg"})
# per PTX opcode: (f32, f64, f16/bf16, integer) forms
ARITH = {
    "add": ("FADD", "DADD", "HADD2", "IADD3"), "sub": ("FADD", "DADD", "HADD2", "IADD3"),
    "mul": ("FMUL", "DMUL", "HMUL2", "IMAD"), "mad": ("FFMA", "DFMA", "HFMA2", "IMAD"),
    "fma": ("FFMA", "DFMA", "HFMA2", "IMAD"), "min": ("FMNMX", "DSETP", "HMNMX2", "IMNMX"),
    "max": ("FMNMX", "DSETP", "HMNMX2", "IMNMX"), "abs": ("FADD", "DADD", "HADD2", "IABS"),
    "neg": ("FADD", "DADD", "HADD2", "IADD3"), "setp": ("FSETP", "DSETP", "HSETP2", "ISETP"),
    "set": ("FSET", "DSETP", "HSET2", "ISETP"), "selp": ("FSEL", "FSEL", "SEL", "SEL"),
    "slct": ("FSEL", "FSEL", "FSEL", "SEL"), "div": ("MUFU.RCP", "MUFU.RCP64H", "MUFU.RCP", "IMAD.HI"),
    "rem": ("FADD", "DADD", "HADD2", "IMAD.HI"), "testp": ("FSETP", "DSETP", "HSETP2", "ISETP"),
    "copysign": ("LOP3.LUT", "LOP3.LUT", "LOP3.LUT", "LOP3.LUT"), "mul24": ("IMAD",) * 4, "mad24": ("IMAD",) * 4,
}
MUFU = {"sqrt": "SQRT", "rsqrt": "RSQ", "rcp": "RCP", "sin": "SIN", "cos": "COS", "lg2": "LG2", "ex2": "EX2",
        "tanh": "TANH"}
SIMPLE = {
    "popc": "POPC", "clz": "FLO.U32", "bfind": "FLO", "fns": "FLO", "brev": "BREV", "prmt": "PRMT", "bfe": "SGXT",
    "bfi": "BMSK", "dp4a": "IDP.4A", "dp2a": "IDP.2A", "sad": "VABSDIFF", "vabsdiff": "VABSDIFF",
    "vabsdiff4": "VABSDIFF4", "lop3": "LOP3.LUT", "shf": "SHF", "cvta": "MOV", "bra": "BRA", "brx": "BRX",
    "call": "CALL.REL.NOINC", "exit": "EXIT", "trap": "BPT.TRAP", "brkpt": "BPT", "nanosleep": "NANOSLEEP",
    "pmevent": "PMTRIG", "isspacep": "QSPC", "activemask": "VOTE.ANY", "membar": "MEMBAR.SC.GPU",
    "fence": "MEMBAR.SC.GPU", "prefetch": "CCTL.E.PF2", "prefetchu": "CCTL.E.PF2", "tex": "TEX", "tld4": "TLD4",
    "txq": "TXQ", "suld": "SULD", "sust": "SUST", "sured": "SURED", "suq": "SUQUERY", "nop": "NOP",
    "ldmatrix": "MOVM", "stmatrix": "MOVM", "getctarank": "MOV", "mapa": "MOV", "mov": "MOV",
}
LOGIC = frozenset({"and", "or", "xor", "not", "cnot"})
ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
FLOATS = {"f32": 0, "f64": 1, "f16": 2, "f16x2": 2, "bf16": 2, "bf16x2": 2, "tf32": 0}
WIDE = frozenset({"u64", "s64", "b64", "f64"})


# ------------------------------------------------------------------------------------------- opcodes
def _width(size: int) -> str:
    """The opcode suffix Accel-Sim reads an access width from (a bit count, or U<bits>; none: 4 bytes)."""
    return {1: ".U8", 2: ".U16", 4: ""}.get(size, f".{size * 8}")


def _form(ins: ir.Instr, forms: tuple[str, ...]) -> str:
    kinds = [FLOATS[t] for t in ins.types() if t in FLOATS]
    return forms[kinds[-1] if ins.opcode in ("setp", "set", "testp") and kinds else kinds[0] if kinds else 3]


def memory_opcode(ins: ir.Instr, space: str, size: int) -> str | None:
    """The SASS-style opcode of a probed memory access (None: Accel-Sim takes it as no memory access)."""
    op, w = ins.opcode, _width(size)
    if op in ("ld", "ldu"):
        if space in ("const", "param"):
            return None
        strong = ".STRONG.GPU" if ins.has("volatile", "relaxed", "acquire", "cg") else ""
        if space == "global":
            return "LDG.E" + (".CONSTANT" if ins.has("nc") or op == "ldu" else "") + w + strong
        return {"shared": "LDS", "local": "LDL"}.get(space, "LD.E") + w
    if op == "st":
        return {"global": "STG.E", "shared": "STS", "local": "STL"}.get(space, "ST.E") + w
    if op in ("atom", "red"):
        what = next((m for m in ins.mods if m in ATOM_OPS), "add").upper()
        fl = ".F32.FTZ.RN" if what == "ADD" and "f32" in ins.types() else ""
        wide = ".64" if size == 8 else _width(size) if size > 8 else ""
        if space == "shared":
            return f"ATOMS.{what}{wide}"
        unit = ("RED" if op == "red" else "ATOMG") if space == "global" else ("RED" if op == "red" else "ATOM")
        return f"{unit}.E.{what}{fl}{wide}" + (".STRONG.GPU" if space == "global" else "")
    if op == "cp":
        return "LDGSTS.E" + w
    return None


def sass_opcode(ins: ir.Instr, in_kernel: bool) -> str:
    """A SASS-style opcode for a PTX instruction that makes no memory access (see the module doc)."""
    op, mods = ins.opcode, ins.mods
    if op in ("ld", "ldu"):
        return "LDC" if ins.has("param", "const") else "MOV"  # (loads with records go through memory_opcode)
    if op == "st" and ins.has("param"):
        return "MOV"
    if op == "mov":
        src = ins.operands[1] if len(ins.operands) > 1 else None
        if isinstance(src, ir.Reg) and SPECIAL_REG.match(src.name):
            if src.name.startswith("%clock") or src.name.startswith("%globaltimer"):
                return "CS2R"
            return "S2R" if src.name.startswith(S2R_SOURCES) else "MOV"
        return "PLOP3.LUT" if "pred" in mods else "MOV"
    if op in LOGIC:
        return "PLOP3.LUT" if "pred" in mods else "LOP3.LUT"
    if op in ("shl", "shr"):
        wide = ".U64" if any(t in WIDE for t in ins.types()) else ".U32"
        return ("SHF.L" if op == "shl" else "SHF.R") + (".S32" if "s32" in mods or "s64" in mods else wide) + ".HI"
    if op in ("mul", "mad") and not any(t in FLOATS for t in ins.types()):
        return "IMAD" + (".WIDE" if "wide" in mods else ".HI" if "hi" in mods else "")
    if op in ARITH:
        return _form(ins, ARITH[op])
    if op in MUFU:
        f64 = "f64" in ins.types()
        return "MUFU." + MUFU[op] + ("64H" if f64 and op in ("rcp", "rsqrt", "sqrt") else "")
    if op == "cvt":
        ts = ins.types()
        dst, src = (ts[0], ts[-1]) if ts else ("", "")
        if dst in FLOATS and src in FLOATS:
            return "FRND" if dst == src else ("F2FP.PACK_AB" if dst.endswith("x2") else "F2F")
        return "I2F" if dst in FLOATS else "F2I" if src in FLOATS else "I2I"
    if op in ("bar", "barrier"):
        if "warp" in mods:
            return "WARPSYNC"
        return "BAR.ARV" if "arrive" in mods else "BAR.RED.POPC" if "red" in mods else "BAR.SYNC"
    if op == "ret":
        return "EXIT" if in_kernel else "RET.REL.NODEC"
    if op == "shfl":
        return "SHFL." + next((m.upper() for m in mods if m in ("idx", "up", "down", "bfly")), "IDX")
    if op == "vote":
        return "VOTE.ALL" if ("all" in mods or "uni" in mods) else "VOTE.ANY"
    if op == "match":
        return "MATCH.ALL" if "all" in mods else "MATCH.ANY"
    if op == "redux":
        return "REDUX." + next((m.upper() for m in mods if m in ("add", "min", "max", "and", "or", "xor")), "SUM")
    if op in ("mma", "wmma"):
        if "load" in mods or "store" in mods:
            return "MOVM"
        ts = ins.types()
        return "DMMA.884" if "f64" in ts else "IMMA.16832" if any(t[1:] in ("8", "4") or t == "b1" for t in ts) \
            else "HMMA.16816.F32"
    if op == "cp" and ins.has("async"):
        return "LDGDEPBAR" if "commit_group" in mods else "DEPBAR.LE"
    return SIMPLE.get(op, FALLBACK_OPCODE)


# ------------------------------------------------------------------------------------------ registers
def _predicates(instrs: list[ir.Instr]) -> set[str]:
    """Register names used as predicates (no declarations reach the plan: inferred from their uses)."""
    preds: set[str] = set()

    def add(o) -> None:
        if isinstance(o, ir.Reg):
            preds.add(o.name)
        elif isinstance(o, ir.Pair):
            add(o.first)
            add(o.second)
        elif isinstance(o, ir.Vec):
            for x in o.items:
                add(x)

    for ins in instrs:
        ops = ins.operands
        if ins.guard is not None:
            preds.add(ins.guard.name)
        if not ops:
            continue
        waits = ins.opcode == "mbarrier" and ins.has("test_wait", "try_wait")
        if ins.opcode in ("setp", "testp", "isspacep") or waits:
            add(ops[0])
        elif "pred" in ins.mods:  # and.pred, mov.pred, vote.any.pred, ld.param.pred, ...
            for o in ops:
                add(o)
        if ins.opcode == "selp" and len(ops) == 4:
            add(ops[3])
        if ins.opcode == "vote" and len(ops) > 1:
            add(ops[1])
        if ins.opcode == "bar" and ins.has("red"):
            add(ops[-1])
        if isinstance(ops[0], ir.Pair) and ins.opcode not in ("setp",):  # shfl/match/elect d|p
            add(ops[0].second)
    return preds


class Registers:
    """R<n> numbers of the GPR names, in order of first appearance (module doc)."""

    def __init__(self, instrs: list[ir.Instr]) -> None:
        self.preds = _predicates(instrs)
        self.number: dict[str, int] = {}
        self.slots = 0  # 32-bit register slots (64-bit registers take two)
        for ins in instrs:
            dst, srcs = _operand_regs(ins)
            wide = ins.has("wide") or bool(ins.types()) and ins.types()[0] in WIDE
            for i, name in enumerate(dst + srcs):
                if self._gpr(name) and name not in self.number:
                    n = len(self.number)
                    self.number[name] = n + (n >= RZ)
                    self.slots += 2 if i < len(dst) and wide else 1

    def _gpr(self, name: str) -> bool:
        return name not in self.preds and name != "_" and not SPECIAL_REG.match(name)

    def regs(self, names: list[str]) -> list[str]:
        return [f"R{self.number[n]}" for n in names if self._gpr(n) and n in self.number]


def _first_reg(o) -> list[str]:
    if isinstance(o, ir.Reg):
        return [o.name]
    if isinstance(o, ir.Pair):
        return [o.first.name]
    if isinstance(o, ir.Vec):  # SASS names a register vector by its first register
        return next(([x.name] for x in o.items if isinstance(x, ir.Reg) and x.name != "_"), [])
    if isinstance(o, ir.Addr) and isinstance(o.base, ir.Reg):
        return [o.base.name]
    return []


def _operand_regs(ins: ir.Instr) -> tuple[list[str], list[str]]:
    """(destination names, source names) of an instruction's register operands, in operand order."""
    ops = ins.operands
    has_dest = bool(ops) and ins.opcode not in NO_DEST and isinstance(ops[0], ir.Reg | ir.Vec | ir.Pair) and \
        not (ins.opcode in ("wmma",) and ins.has("store"))
    dst = _first_reg(ops[0]) if has_dest else []
    srcs = [n for o in ops[1 if has_dest else 0:] for n in _first_reg(o)]
    return dst, srcs


# ------------------------------------------------------------------------------------ static program
@dataclass
class _Line:
    pc: int
    opcode: str
    dst: str          # "0" or "1 R5"
    src: str          # "0" or "2 R1 R2"
    memsite: int      # the memory site whose records give the addresses, -1: none
    width: int        # bytes per thread (memory instructions)
    ptx_line: int


def _program(plan, kernel: str) -> tuple[dict[int, list[_Line]], dict[int, int], Registers]:
    """Per block site its lines' static part; per block site its first PC (issue priority); registers."""
    from ptxjit.instrument.probes import str_pos

    funcs = list(dict.fromkeys(s.function for s in plan.blocks))
    order = sorted(plan.blocks, key=lambda s: (funcs.index(s.function), s.stmt))
    instrs = [ins for s in order for ins in plan.block_instrs[s.ident]]
    regs = Registers(instrs)
    mem_at: dict[tuple[int, str], object] = {}
    for m in plan.memory:
        if m.part == 0:  # cp.async: the global source
            mem_at[(m.block, m.ptx)] = m
    lines: dict[int, list[_Line]] = {}
    first_pc: dict[int, int] = {}
    pc = 0
    for s in order:
        first_pc[s.ident] = pc
        out = lines[s.ident] = []
        for ins in plan.block_instrs[s.ident]:
            dst, srcs = _operand_regs(ins)
            d, r = regs.regs(dst)[:MAX_DST], regs.regs(srcs)[:MAX_SRC]
            m = mem_at.get((s.ident, str_pos(ins)))
            opcode = memory_opcode(ins, m.space, m.size) if m is not None else None
            if opcode is None:
                opcode, m = sass_opcode(ins, s.function == kernel), None
            out.append(_Line(pc, opcode, " ".join([str(len(d)), *d]), " ".join([str(len(r)), *r]),
                             m.ident if m is not None else -1, _opcode_width(opcode) if m is not None else 0,
                             ins.pos.line))
            pc += 16
    return lines, first_pc, regs


def _opcode_width(opcode: str) -> int:
    """The access width Accel-Sim reads from a memory opcode (its first numeric or U<bits> token)."""
    for tok in opcode.split(".")[1:]:
        if tok.isdigit():
            return int(tok) // 8
        if tok[:1] == "U" and tok[1:].isdigit():
            return int(tok[1:]) // 8
    return 4


# ----------------------------------------------------------------------------------- dynamic streams
def _occurrences(thread: np.ndarray, site: np.ndarray, seq: np.ndarray):
    """Per record: k (its thread's k-th execution of that site), and the sorted view for lookups."""
    order = np.lexsort((seq, site, thread))
    code = thread[order] * (int(site.max()) + 1 if len(site) else 1) + site[order]
    start = np.flatnonzero(np.r_[True, code[1:] != code[:-1]]) if len(code) else np.zeros(0, np.int64)
    group = np.cumsum(np.r_[False, code[1:] != code[:-1]]) if len(code) else np.zeros(0, np.int64)
    k_sorted = np.arange(len(order)) - start[group]
    k = np.empty(len(order), np.int64)
    k[order] = k_sorted
    return k, order, code, group, start, k_sorted


def _merge(lanes: list[tuple[int, list[int], list[int]]], first_pc: dict[int, int]) -> list[tuple[int, int, int]]:
    """Issue order of a divergent warp's block instances: [(site, k, mask)] (module doc)."""
    heads = [0] * len(lanes)
    left: dict[tuple[int, int], int] = {}
    for _, sites, ks in lanes:
        for key in zip(sites, ks, strict=True):
            left[key] = left.get(key, 0) + 1
    out = []
    while True:
        at: dict[tuple[int, int], list[int]] = {}
        for i, (_, sites, ks) in enumerate(lanes):
            h = heads[i]
            if h < len(sites):
                at.setdefault((sites[h], ks[h]), []).append(i)
        if not at:
            return out
        ready = [key for key, who in at.items() if len(who) == left[key]]
        key = min(ready or at, key=lambda kk: (first_pc[kk[0]], kk[1]))
        who = at[key]
        out.append((key[0], key[1], sum(1 << lanes[i][0] for i in who)))
        left[key] -= len(who)
        for i in who:
            heads[i] += 1


def _warp_streams(t, first_pc: dict[int, int]):
    """{(cta, warp): [(block site, k, mask)]} in issue order, and the lookup tables of _occurrences."""
    r = t.records("blocks")
    nthreads = int(np.prod(t.block))
    nwarps = (nthreads + WARP - 1) // WARP
    cta, tid = r["cta"].astype(np.int64), r["tid"].astype(np.int64)
    site, seq = r["site"].astype(np.int64), r["seq"].astype(np.int64)
    k, *lookup = _occurrences(cta * nthreads + tid, site, seq)
    streams: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    if not len(r):
        return streams, nwarps, (k, *lookup)
    order = np.lexsort((seq, tid, cta))  # each thread's records together, in its program order
    s_site, s_k, s_tid, s_cta = site[order], k[order], tid[order], cta[order]
    thread = s_cta * nthreads + s_tid
    t_start = np.flatnonzero(np.concatenate(([True], thread[1:] != thread[:-1])))
    t_len = np.diff(np.append(t_start, len(order)))
    t_tid, t_cta = s_tid[t_start], s_cta[t_start]
    t_warp = t_cta * nwarps + t_tid // WARP
    w_first = np.flatnonzero(np.concatenate(([True], t_warp[1:] != t_warp[:-1])))  # first thread of each warp
    w_of_thread = np.repeat(np.arange(len(w_first)), np.diff(np.append(w_first, len(t_start))))
    # uniform warps (every lane ran the same blocks: the common case) compare each record with the same
    # position of the warp's first thread, vectorized; the others are merged lane by lane
    lead = w_first[w_of_thread]
    pos = np.arange(len(order)) - np.repeat(t_start, t_len)
    same_len = np.repeat(t_len == t_len[lead], t_len)
    at = np.repeat(t_start[lead], t_len) + np.minimum(pos, np.repeat(t_len[lead], t_len) - 1)
    rec_ok = same_len & (s_site == s_site[at])
    thread_ok = np.logical_and.reduceat(rec_ok, t_start)
    warp_ok = np.logical_and.reduceat(thread_ok, w_first)
    warp_mask = np.bitwise_or.reduceat(np.left_shift(np.int64(1), t_tid % WARP), w_first)
    sites_l, ks_l = s_site.tolist(), s_k.tolist()
    bounds = np.append(w_first, len(t_start)).tolist()
    starts, lens, lanes_of = t_start.tolist(), t_len.tolist(), (t_tid % WARP).tolist()
    for w, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        key = (int(t_cta[a]), int(t_tid[a] // WARP))
        if warp_ok[w]:
            i0, n = starts[a], lens[a]
            mask = int(warp_mask[w])
            streams[key] = [(s, kk, mask) for s, kk in zip(sites_l[i0:i0 + n], ks_l[i0:i0 + n], strict=True)]
        else:
            lanes = [(lanes_of[i], sites_l[starts[i]:starts[i] + lens[i]], ks_l[starts[i]:starts[i] + lens[i]])
                     for i in range(a, b)]
            streams[key] = _merge(lanes, first_pc)
    return streams, nwarps, (k, *lookup)


def _memory_groups(t, lookup) -> dict[tuple[int, int, int, int, int], tuple[int, list[int], list[int]]]:
    """{(cta, warp, block site, k, memory site): (lane mask, lanes, addresses)}: each memory record joins
    the last execution of its block by its thread before it (module doc)."""
    k_rec, order, code, group, start, k_sorted = lookup
    m = t.records("memory")
    if not len(m) or not len(order):
        return {}
    nthreads = int(np.prod(t.block))
    b = t.records("blocks")
    nsites = int(b["site"].max()) + 1
    block_of = np.array([s.block for s in t.plan.memory], np.int64)
    mcta, mtid = m["cta"].astype(np.int64), m["tid"].astype(np.int64)
    msite, mseq = m["site"].astype(np.int64), m["seq"].astype(np.uint64)
    mblock = block_of[msite]
    mcode = (mcta * nthreads + mtid) * nsites + mblock
    # a key that grows along the sorted block records: (group << 32) | seq
    bkey = (group.astype(np.uint64) << np.uint64(32)) | b["seq"][order].astype(np.uint64)
    ucode = code[start]
    g = np.minimum(np.searchsorted(ucode, mcode), len(ucode) - 1)
    pos = np.searchsorted(bkey, (g.astype(np.uint64) << np.uint64(32)) | mseq) - 1
    ok = (ucode[g] == mcode) & (pos >= 0) & (mblock < nsites)
    ok &= group[np.maximum(pos, 0)] == g
    mk = k_sorted[np.maximum(pos, 0)]
    sel = np.flatnonzero(ok)
    keys = (mcta[sel], mtid[sel] // WARP, mblock[sel], mk[sel], msite[sel])
    o = np.lexsort((mtid[sel],) + keys[::-1])
    cols = [x[o] for x in keys]
    lane = (mtid[sel] % WARP)[o]
    change = np.zeros(len(o), bool)
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    cuts = np.flatnonzero(np.append(change, True) | np.append(True, np.zeros(len(o), bool))).tolist() \
        if len(o) else [0]
    masks = np.bitwise_or.reduceat(np.left_shift(np.int64(1), lane), cuts[:-1]).tolist() if len(o) else []
    lanes, addrs = lane.tolist(), m["addr"][sel][o].tolist()
    ckeys = list(zip(*(c[cuts[:-1]].tolist() for c in cols), strict=True))
    return {key: (mm, lanes[a:e], addrs[a:e])
            for key, mm, a, e in zip(ckeys, masks, cuts[:-1], cuts[1:], strict=True)}


def _addresses(lanes: list[int], addrs: list[int], compress: bool) -> str:
    """Mode and addresses of the active lanes, as the tracer compresses them (module doc)."""
    n = len(lanes)
    if n == 0 or not compress:
        return " ".join(["0", *(f"0x{a:016x}" for a in addrs)])
    deltas = [y - x for x, y in zip(addrs, addrs[1:], strict=False)]
    if n >= 2 and lanes[-1] - lanes[0] == n - 1 and deltas.count(deltas[0]) == n - 1 \
            and -(1 << 31) <= deltas[0] < (1 << 31):
        return f"1 0x{addrs[0]:x} {deltas[0]}"
    return " ".join([f"2 0x{addrs[0]:x}", *map(str, deltas)])


# ------------------------------------------------------------------------------------------- writer
def write_accelsim(t, directory, *, compress: bool = True, lineinfo: bool = False,
                   binary_version: int = BINARY_VERSION) -> dict[str, Path]:
    """Write `kernelslist.g` and `kernel-1.traceg` for Trace `t` into `directory` (module doc).
    `compress=False` lists every address (mode 0); `lineinfo` puts the PTX line first on each line."""
    missing = [r for r in ("blocks", "memory") if r not in t.record_types]
    if missing:
        raise ValueError(f"the Accel-Sim export needs 'blocks' and 'memory' records; this trace lacks "
                         f"{', '.join(repr(m) for m in missing)} (trace with records=('blocks', 'memory'))")
    lines, first_pc, regs = _program(t.plan, t.kernel)
    streams, nwarps, lookup = _warp_streams(t, first_pc)
    mem = _memory_groups(t, lookup)
    d = Path(directory)
    os.makedirs(d, exist_ok=True)
    kpath, lpath = d / "kernel-1.traceg", d / "kernelslist.g"
    gx, gy, gz = t.grid
    texts: dict[tuple[int, int], list] = {}  # (site, mask): its lines, memory lines left to fill in
    with open(kpath, "w") as f:
        f.write(_header(t, regs, lineinfo, binary_version))
        for c in range(gx * gy * gz):
            f.write(f"\n#BEGIN_TB\n\nthread block = {c % gx},{c // gx % gy},{c // (gx * gy)}\n")
            for w in range(nwarps):
                body = []
                for site, k, mask in streams.get((c, w), ()):
                    text = texts.get((site, mask))
                    if text is None:
                        text = texts[(site, mask)] = [_line(ln, mask, lineinfo) if ln.memsite < 0 else ln
                                                      for ln in lines[site]]
                    for ln in text:
                        body.append(ln if isinstance(ln, str) else
                                    _memory_line(ln, mask, mem.get((c, w, site, k, ln.memsite)), compress, lineinfo))
                f.write(f"\nwarp = {w}\ninsts = {len(body)}\n")
                if body:
                    f.write("\n".join(body) + "\n")
            f.write("\n#END_TB\n")
    lpath.write_text(f"{kpath.name}\n")
    return {"kernelslist": lpath, "kernel": kpath}


def _line(ln: _Line, mask: int, lineinfo: bool) -> str:
    head = f"{ln.ptx_line} " if lineinfo else ""
    return f"{head}{ln.pc:04x} {mask:08x} {ln.dst} {ln.opcode} {ln.src} 0"


def _memory_line(ln: _Line, mask: int, group, compress: bool, lineinfo: bool) -> str:
    gmask, lanes, addrs = group if group is not None else (0, [], [])
    if gmask & ~mask:  # a split instance (_merge): only its own lanes
        keep = [i for i, lane in enumerate(lanes) if mask >> lane & 1]
        lanes, addrs = [lanes[i] for i in keep], [addrs[i] for i in keep]
        gmask &= mask
    head = f"{ln.ptx_line} " if lineinfo else ""
    return f"{head}{ln.pc:04x} {gmask:08x} {ln.dst} {ln.opcode} {ln.src} {ln.width} " \
           f"{_addresses(lanes, addrs, compress)}"


def _header(t, regs: Registers, lineinfo: bool, binary_version: int) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("ptxjit")
    except PackageNotFoundError:
        ours = "dev"
    m = t.records("memory")
    sites = t.plan.memory
    shared = np.array([s.space == "shared" for s in sites], bool)[m["site"]] if sites else np.zeros(0, bool)
    size = np.array([s.size for s in sites], np.uint64)[m["site"]] if sites else np.zeros(0, np.uint64)
    shmem = int((m["addr"][shared] + size[shared]).max()) if shared.any() else 0
    threads = -(-int(np.prod(t.block)) // WARP) * WARP
    nregs = max(1, min(regs.slots, 255, 65536 // threads))
    gx, gy, gz = t.grid
    bx, by, bz = t.block
    return "\n".join([
        f"-kernel name = {t.kernel}", "-kernel id = 1", f"-grid dim = ({gx},{gy},{gz})",
        f"-block dim = ({bx},{by},{bz})", f"-shmem = {shmem}", f"-nregs = {nregs}",
        f"-binary version = {binary_version}", "-cuda stream id = 0", f"-shmem base_addr = 0x{SHMEM_BASE:016x}",
        f"-local mem base_addr = 0x{LOCAL_BASE:016x}", f"-nvbit version = none (ptxjit {ours})",
        f"-accelsim tracer version = {TRACER_VERSION}", f"-enable lineinfo = {int(lineinfo)}", "", FORMAT_LINE, "",
    ])


__all__ = ["FALLBACK_OPCODE", "Registers", "memory_opcode", "sass_opcode", "write_accelsim"]
