"""Variable initializers (`= 1`, `= {1, 2}`, `= {{1, 2}, {3, 4}}`), parsed as ptxas reads them."""

from __future__ import annotations

from ptxjit.errors import PTXSyntaxError
from ptxjit.frontend import ir
from ptxjit.frontend.constexpr import STARTERS, parse_const, parse_int_const

MAX_INIT_NESTING = 32


def parse_initializer(p, var: ir.VarDecl) -> None:
    """`= value` or `= {…}` with one brace level per array dimension (and one for a vector), as
    ptxas reads them: fewer elements than the dimension are zero-filled, more are an error, an
    unsized or [0] first dimension takes its size from the initializer, values must suit the type
    (integers for .u/.s, floats for .f, either for .b).  Sets var.init to the flat element list,
    zero-padded up to the last given element, and fixes an inferred first dimension."""
    shape = [*var.dims, *([var.vector] if var.vector > 1 else [])]
    start = p.peek()
    flat: list = []
    first_len = 0
    # iterative walk: a stack of [dimension index, elements seen at that level, element offset]
    stride = [1] * (len(shape) + 1)
    for k in range(len(shape) - 1, -1, -1):
        stride[k] = stride[k + 1] * (shape[k] or 1)
    if not shape:
        init_value(p, var, flat)
        var.init = flat
        return
    stack: list[list[int]] = []
    p.expect("{")
    stack.append([0, 0, 0])
    while stack:
        level = stack[-1]
        dim = shape[level[0]]
        if p.accept("}"):
            stack.pop()
            if not stack:
                first_len = level[1]
                break
            if not p.at("}"):
                p.expect(",")
            continue
        if dim is not None and dim != 0 and level[1] >= dim:
            raise PTXSyntaxError(p.pos(), f"greater number of elements in the initializer of "
                                 f"'{var.name}' than its dimension {dim}")
        if level[0] + 1 < len(shape):  # an inner brace list
            if len(stack) > MAX_INIT_NESTING:
                raise p.error("a shallower initializer")
            p.expect("{")
            stack.append([level[0] + 1, 0, level[2] + level[1] * stride[level[0] + 1]])
            level[1] += 1
            continue
        pos = level[2] + level[1]
        if pos > len(flat):
            flat.extend([0] * (pos - len(flat)))  # zero-fill short inner lists
        init_value(p, var, flat)
        level[1] += 1
        if not p.at("}"):
            p.expect(",")
    if var.dims and not var.dims[0]:  # [] or [0]: the size comes from the initializer
        if first_len == 0:
            raise PTXSyntaxError(p.pos(start), f"empty initializer for unsized array '{var.name}'")
        var.dims[0] = first_len
    var.init = flat

def init_value(p, var: ir.VarDecl, out: list) -> None:
    """One scalar of an initializer (a literal, a constant expression or `var+offset`), checked
    against the variable's type as ptxas does."""
    tok = p.peek()
    typ = var.type
    if tok[0] == "hexfloat" or (tok[1] == "-" and p.peek(1)[0] == "hexfloat"):
        if typ[0] in "us":
            raise PTXSyntaxError(p.pos(), f"initial value type mismatch: float for .{typ} '{var.name}'")
        f = p.parse_hexfloat()
        out.append(f.value if ir.is_float_type(typ) else f.bits)  # a bit type keeps the literal's bits
    elif tok[0] == "ident" and tok[1] != "WARP_SZ":
        p.next()
        name = tok[1]
        if name in ("generic", "cvta"):
            p.expect("(")
            name = p.expect_kind("ident", "a variable name")[1]
            p.expect(")")
        off = parse_int_const(p, "an integer offset") if p.at("+") else 0
        out.append(ir.Sym(name, off))
    elif tok[0] in ("int", "float") or tok[1] in STARTERS:
        c = parse_const(p)
        if not c.is_float and ir.is_float_type(typ):  # ptxas: "Initial value type mismatch"
            raise PTXSyntaxError(p.pos(tok), f"initial value type mismatch: integer for .{typ} "
                                 f"'{var.name}' (write a float: 1.0 or 0f3F800000)")
        if c.is_float and typ[0] in "us":
            raise PTXSyntaxError(p.pos(tok), f"initial value type mismatch: float for .{typ} '{var.name}'")
        out.append(c.value)
    else:
        raise p.error("an initializer value")
