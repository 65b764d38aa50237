"""Small LLVM IR builders every part of the lowering uses: a counted loop, the completion of a CTA
barrier in the worker record, and the no-alias marks on the launch and worker records."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.lower import abi
from ptxjit.lower.types import I32, I64, const_int


def complete_barrier(b: ll.IRBuilder, W: ll.Value) -> None:
    """A CTA barrier completes: bar.red results take the accumulators, which start over."""
    for k, ident in enumerate((0, 1, 0)):
        acc = b.gep(W, [const_int(I32, abi.W_RED_ACC + k)])
        b.store(b.load(acc), b.gep(W, [const_int(I32, abi.W_RED_RES + k)]))
        b.store(const_int(I64, ident), acc)


def noalias_records(f: ll.Function) -> None:
    """The launch and worker records are only touched by the runtime's own code: telling LLVM that
    kernel memory accesses never alias them lets it hoist their loads out of the thread loop."""
    for a, size in zip(f.args[:2], (abi.L_SIZE * 8, abi.W_SIZE * 8), strict=True):
        a.add_attribute("noalias")
        a.attributes.dereferenceable = size  # so loads of record slots can be hoisted freely


def type_suffix(t: ll.Type) -> str:
    if isinstance(t, ll.IntType):
        return f"i{t.width}"
    if isinstance(t, ll.FloatType):
        return "f32"
    if isinstance(t, ll.DoubleType):
        return "f64"
    if isinstance(t, ll.HalfType):
        return "f16"
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    raise TypeError(f"no intrinsic suffix for {t}")


class for_range:
    """`with for_range(b, start, end) as i:` emits a counted loop; the body goes inside the block."""

    def __init__(self, b: ll.IRBuilder, start: ll.Value, end: ll.Value) -> None:
        self.b = b
        self.start = start
        self.end = end

    def __enter__(self) -> ll.Value:
        b = self.b
        f = b.function
        self.pre = b.block
        self.head = f.append_basic_block("for.head")
        self.body = f.append_basic_block("for.body")
        self.exit = f.append_basic_block("for.end")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(self.start.type)
        self.i.add_incoming(self.start, self.pre)
        b.cbranch(b.icmp_signed("<", self.i, self.end), self.body, self.exit)
        b.position_at_end(self.body)
        return self.i

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        b = self.b
        nxt = b.add(self.i, ll.Constant(self.i.type, 1))
        self.i.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)
