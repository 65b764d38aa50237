"""Operand access of FnLowering (lower/function.py): typed register reads and writes, immediates,
symbols, kernel parameters (specialized ones as constants: ptxjit/tiers) and addresses per state space."""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.isa.special import is_special
from ptxjit.lower import abi
from ptxjit.lower.types import F32, I1, I32, I64, PTR, const_int, float_to_bits16, is_float_ll, lltype
from ptxjit.passes.dataflow import defs_uses

I16_ = ll.IntType(16)




# f32 instructions whose NaN results are canonical on the GPU ("arithmetic"), and instructions whose
# result does not depend on a NaN operand's bits (they need no canonical input)
F32_ARITH = frozenset({"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2",
                       "ex2", "tanh", "cvt"})
# readers whose result does not depend on an input NaN's payload.  Not cvt: a plain cvt.f32.f32 copies the
# bits and cvt.f64.f32 keeps the payload (golden isa_cvt_f32_f32, isa_cvt_f64_f32), so a 'pure' register
# (an arithmetic result, canonical 0x7fffffff on the GPU) is canonicalized before a cvt reads it
NAN_BLIND = (F32_ARITH - {"cvt"}) | {"min", "max", "setp", "set", "testp", "slct"}


def nan_classes(fn: ir.Function) -> dict[str, str]:
    """Per f32 register: 'pure' (every definition is arithmetic: canonicalize NaN where its bits are
    observed), 'mixed' (canonicalize at the arithmetic definitions), or 'raw' (exact bits always)."""

    arith: set[str] = set()
    exact: set[str] = set()
    for ins in fn.instructions:
        d, _ = defs_uses(ins)
        if not d:
            continue
        # a plain cvt.f32.f32 copies the bits, NaN payloads included (golden isa_cvt_f32_f32); with a
        # rounding to integer, .ftz or .sat it is arithmetic
        is_arith = ins.opcode in F32_ARITH and ins.types()[-1:] == ["f32"] and (
            ins.opcode != "cvt" or ins.types()[0] == "f32"
            and ins.has("rni", "rzi", "rmi", "rpi", "ftz", "sat"))
        for r in d:
            if fn.regs.get(r) == "f32":
                (arith if is_arith else exact).add(r)
    return {r: "pure" if r not in exact else "mixed" for r in arith} | {r: "raw" for r in exact - arith}



F32_CANON_NAN = 0x7FFFFFFF  # the f32 NaN GPU arithmetic returns


def canon_nan(lw, x: ll.Value) -> ll.Value:
    """NaN -> 0x7FFFFFFF, the GPU's f32 NaN.  Selected on the integer bits: LLVM treats NaN payloads
    as unspecified and folds a float `select(isnan(x), NaN, x)` to `x`, dropping the canonicalization."""
    if x.type != F32:
        return x
    b = lw.b
    bits = b.bitcast(x, I32)
    nan = b.icmp_unsigned(">", b.and_(bits, const_int(I32, 0x7FFFFFFF)), const_int(I32, 0x7F800000))
    return b.bitcast(b.select(nan, const_int(I32, F32_CANON_NAN), bits), F32)


class OperandLowering:
    """Mixin of FnLowering: operands read and written as PTX types."""

    def read(self, op, t: str) -> ll.Value:
        """Read `op` as PTX type `t`, giving a value of LLVM type lltype(t)."""
        if isinstance(op, ir.Vec) and len(op.items) == 1:
            op = op.items[0]  # `{%r1}`: a one-element vector operand, as Triton writes them
        want = lltype(t)
        if isinstance(op, ir.Reg):
            if op.name in self.regs:
                v = self.b.load(self.regs[op.name])
                if self.nan_class.get(op.name) == "pure" and self.cur is not None \
                        and self.cur.opcode not in NAN_BLIND:
                    v = canon_nan(self, v)  # the bits of an arithmetic result are observed here
                v = self.convert_bits(v, want, t.startswith("s"))
                if op.neg:
                    v = self.b.not_(v)
                return v
            if is_special(op.name):
                return self.convert_bits(self.special(op.name), want, False)
            raise self.unsupported(f"undeclared register {op.name}")
        if isinstance(op, ir.Imm):
            if t in ("f32", "f64"):
                return ll.Constant(want, float(op.value))
            if t == "pred":
                return const_int(I1, 1 if op.value else 0)
            return const_int(want, op.value)
        if isinstance(op, ir.FImm):
            if t in ("f32", "f64"):
                width = 32 if t == "f32" else 64
                if op.bits is not None and op.width == width:
                    return self.b.bitcast(const_int(ll.IntType(width), op.bits), want)
                return ll.Constant(want, op.value)
            if t in ("f16", "bf16"):
                return const_int(I16_, float_to_bits16(op.value, t))
            if op.bits is not None:
                return self.convert_bits(const_int(ll.IntType(op.width), op.bits), want, False)
            # a decimal literal as a .b64 operand: its f64 bits (isa/match.py admits no other case)
            return self.convert_bits(const_int(I64, struct.unpack("<Q", struct.pack("<d", op.value))[0]), want, False)
        if isinstance(op, ir.Sym):
            return self.convert_bits(self.symbol_value(op), want, False)
        raise self.unsupported(f"operand {op!r} cannot be read as .{t}")

    def read_pred(self, op: ir.Reg) -> ll.Value:
        return self.read(op, "pred")

    def write(self, op, value: ll.Value, t: str) -> None:
        """Write `value` (LLVM type lltype(t)) to register `op`, extending/truncating to its width."""
        if isinstance(op, ir.Vec) and len(op.items) == 1:
            op = op.items[0]
        if isinstance(op, ir.Reg):
            if op.name == "_":
                return
            slot = self.regs.get(op.name)
            if slot is None:
                raise self.unsupported(f"undeclared destination register {op.name}")
            self.b.store(self.convert_bits(value, slot.type.pointee, t.startswith("s")), slot)
            return
        raise self.unsupported(f"destination {op!r} is not a register")

    def canonicalize_at_def(self) -> bool:
        """Must the current instruction's f32 result be NaN-canonicalized when computed?"""
        d = self.cur.operands[0] if self.cur is not None and self.cur.operands else None
        return not (isinstance(d, ir.Reg) and self.nan_class.get(d.name) == "pure")

    def entry_param(self, addr: ir.Addr, elt: ll.Type, size: int) -> ll.Value:
        """The value of a kernel parameter, loaded once in the entry block."""
        cache = self.__dict__.setdefault("_param_values", {})
        off = self.cg.kparams[addr.base.name] + addr.offset
        key = (off, str(elt))
        v = cache.get(key)
        if v is None and self.cg.spec_params:
            v = cache[key] = _param_constant(self.cg.spec_params, off, elt, size)
        if v is None:
            b = self.b
            with b.goto_entry_block():
                v = b.load(b.gep(self.param_base(), [const_int(I64, off)]), typ=elt, align=size)
                v.set_metadata("invariant.load", self.cg.empty_md())
            cache[key] = v
        return v

    def param_base(self) -> ll.Value:
        """The kernel parameter buffer as a dereferenceable pointer (so its loads may be hoisted)."""
        p = self.__dict__.get("_param_base")
        if p is None:
            b = self.b
            slot = b.bitcast(b.gep(self.launch, [const_int(I32, abi.L_PARAMS)]), PTR.as_pointer())
            p = b.load(slot, typ=PTR, align=8)
            size = max(8, self.cg.kparam_size)
            p.set_metadata("dereferenceable", self.cg.llmod.add_metadata([const_int(I64, size)]))
            p.set_metadata("align", self.cg.llmod.add_metadata([const_int(I64, 8)]))
            p.set_metadata("invariant.load", self.cg.empty_md())
            self._param_base = p
        return p

    def is_pointer_reg(self, op) -> bool:
        return isinstance(op, ir.Reg) and op.name in self.pointer_regs

    def read_pointer(self, op) -> ll.Value:
        """A pointer register's value as an LLVM pointer (keeps address arithmetic visible to LLVM)."""
        return self.b.load(self.regs[op.name])

    def reg_type(self, op) -> str | None:
        if isinstance(op, ir.Reg):
            return self.reg_types.get(op.name)
        return None

    def convert_bits(self, v: ll.Value, want: ll.Type, signed: bool) -> ll.Value:
        """Reinterpret/resize a register value, as PTX does between typed instructions and registers."""
        have = v.type
        if have == want:
            return v
        b = self.b
        if have == PTR:
            return self.convert_bits(b.ptrtoint(v, I64), want, signed)
        if want == PTR:
            return b.inttoptr(self.convert_bits(v, I64, signed), PTR)
        if have == I1:
            return self.convert_bits(b.zext(v, I32), want, False)
        if want == I1:
            if is_float_ll(have):
                v = b.bitcast(v, ll.IntType(_bits(have)))
            return b.icmp_unsigned("!=", v, ll.Constant(v.type, 0))
        hw, ww = _bits(have), _bits(want)
        if is_float_ll(have):
            v = b.bitcast(v, ll.IntType(hw))
        if hw < ww:
            v = b.sext(v, ll.IntType(ww)) if signed else b.zext(v, ll.IntType(ww))
        elif hw > ww:
            v = b.trunc(v, ll.IntType(ww))
        if is_float_ll(want):
            v = b.bitcast(v, want)
        return v

    # ------------------------------------------------------------------ symbols and addresses
    def symbol_value(self, sym: ir.Sym) -> ll.Value:
        """The value of a symbol used as an operand: its address in its own state space (i64)."""
        b = self.b
        name = sym.name
        if name in self.var_ptrs:
            v = b.ptrtoint(self.var_ptrs[name], I64)
        else:
            space, off = self.cg.symbol(name, self.fn, self.cur)
            if space == "shared":
                v = const_int(I64, off)
            elif space in ("global", "const"):
                v = b.add(self.launch_slot(abi.L_GLOBALS), const_int(I64, off))
            elif space == "kparam":
                v = b.add(self.launch_slot(abi.L_PARAMS), const_int(I64, off))
            elif space == "func":
                v = b.ptrtoint(self.cg.device_function(name, self.cur), I64)
            else:
                raise self.unsupported(f"cannot take the address of '{name}'")
        if sym.offset:
            v = b.add(v, const_int(I64, sym.offset))
        return v

    def address(self, addr: ir.Addr, space: str) -> ll.Value:
        """A host pointer (i8*) for address operand `addr` in state space `space` ('' = generic)."""
        b = self.b
        base = addr.base
        if base is not None and not -(1 << 47) <= addr.offset < (1 << 47):
            # no memory on x86-64 (or a GPU) is reachable from a pointer with such an offset, and LLVM
            # asserts (aborting the process) on GEP offsets near +-2**63: stop the thread instead
            self.trap(abi.ERR_ILLEGAL_ADDRESS)
            b.position_at_end(self.llfn.append_basic_block("after_illegal_address"))
            return ll.Constant(PTR, None)
        if base is None:
            v = const_int(I64, addr.offset)
            if space == "shared":
                v = b.add(self.shared_base(), v)
            return b.inttoptr(v, PTR)
        if isinstance(base, ir.Sym):
            name = base.name
            if name in self.var_ptrs:
                p = self.var_ptrs[name]
                return b.gep(p, [const_int(I64, addr.offset)]) if addr.offset else p
            v = self.symbol_value(ir.Sym(name, addr.offset))
            if space != "shared" and self.cg.symbol(name, self.fn, self.cur)[0] == "shared":
                # a .shared variable named in a generic access (ld.u32 [smem]): ptxas reads it as the variable's
                # generic address, as cvta.shared would give (its value as an operand is its shared offset)
                return b.gep(self.shared_ptr(), [v])
        else:
            if base.name in self.pointer_regs and space != "shared":
                p = b.load(self.regs[base.name])
                return b.gep(p, [const_int(I64, addr.offset)]) if addr.offset else p
            v = self.read(base, "u64")
            if addr.offset:
                v = b.add(v, const_int(I64, addr.offset))
        if space == "shared":
            rt = self.reg_type(base) if isinstance(base, ir.Reg) else None
            if rt is not None and ir.type_size(rt) == 4:  # a 32-bit shared address: zero-extend it
                v = self.read(base, "u32")
                if addr.offset:
                    v = b.add(v, const_int(I32, addr.offset))
                v = b.zext(v, I64)
            # base pointer + offset: address arithmetic stays visible to LLVM (vectorizable)
            return b.gep(self.shared_ptr(), [v])
        return b.inttoptr(v, PTR)

    def typed_ptr(self, p: ll.Value, t: ll.Type) -> ll.Value:
        return self.b.bitcast(p, t.as_pointer())

    # ------------------------------------------------------------------ special registers


def _bits(t: ll.Type) -> int:
    if isinstance(t, ll.IntType):
        return t.width
    if isinstance(t, ll.FloatType):
        return 32
    if isinstance(t, ll.DoubleType):
        return 64
    if isinstance(t, ll.HalfType):
        return 16
    raise TypeError(t)


def spec_param_int(spec: dict[int, bytes], off: int, size: int) -> int | None:
    """A specialized parameter's bytes [off, off + size) (ptxjit/tiers) as an unsigned integer; None
    where no specialized parameter holds them all."""
    for start, data in spec.items():
        if start <= off and off + size <= start + len(data):
            return int.from_bytes(data[off - start:off - start + size], "little")
    return None


def _param_constant(spec: dict[int, bytes], off: int, elt: ll.Type, size: int) -> ll.Value | None:
    """A specialized parameter's bytes [off, off + size) as a constant of type elt (ptxjit/tiers);
    None where no specialized parameter holds them all.  Floats are bit casts: exact, NaNs too."""
    v = spec_param_int(spec, off, size)
    if v is None:
        return None
    if isinstance(elt, ll.IntType) and elt.width == 8 * size:
        return ll.Constant(elt, v)
    if elt == PTR and size == 8:
        return ll.Constant(I64, v).inttoptr(PTR)
    if isinstance(elt, ll.FloatType | ll.DoubleType | ll.HalfType) and size in (2, 4, 8):
        return ll.Constant(ll.IntType(8 * size), v).bitcast(elt)
    return None
