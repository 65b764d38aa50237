"""Recursive-descent parser: PTX text -> `ir.Module`.

Grammar coverage follows what nvcc, NVRTC, clang and Numba emit: module directives, linkage,
.entry/.func with parameter lists, register/variable declarations (with <N> ranges, arrays,
initializers), .loc/.file, performance directives, labels, guarded instructions, vector and
address operands, call lists, and nested `{ }` scopes (whose declarations are renamed apart).
Every error names file:line:col and what was expected. Instruction and operand syntax lives in
frontend/operands.py (`InstructionParser`, a mixin of `_Parser`).
"""

from __future__ import annotations

from ptxjit.errors import PTXSyntaxError, PTXValidationError, SourcePos
from ptxjit.frontend import ir
from ptxjit.frontend.initializers import parse_initializer
from ptxjit.frontend.lexer import SourceText, Token, tokenize
from ptxjit.frontend.literals import DECIMAL, MAX_LITERAL, decimal_below, int_literal
from ptxjit.frontend.operands import MAX_OPERAND_NESTING, InstructionParser
from ptxjit.frontend.regparams import bind_reg_params, calls_through_params, reg_params

_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_SPACES = {".global", ".const", ".shared", ".local", ".param", ".tex"}
# Nesting limit for array dimensions (operand nesting: frontend/operands.py)
MAX_DIMS = 16
# `.reg .b32 %r<N>` ranges larger than this are kept as ranges and only the registers the body names
# are materialized (a 100-byte declaration must not cost gigabytes); smaller ranges are declared in
# full, so that register counts (Module.kernels) stay what the PTX declares.
LAZY_RANGE = 1024
_PERF = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".pragma", ".noreturn",
         ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters"}


__all__ = ["MAX_DIMS", "MAX_OPERAND_NESTING", "LAZY_RANGE", "parse"]


def parse(text: str, source_name: str = "<ptx>") -> ir.Module:
    return _Parser(SourceText(text, source_name)).parse_module()


def _reg_names(ins: ir.Instr):
    """Names of the registers an instruction mentions (operands, addresses, vectors, guard)."""
    todo = [*ins.operands, ins.guard]
    while todo:
        op = todo.pop()
        if isinstance(op, ir.Reg):
            yield op.name
        elif isinstance(op, ir.Addr):
            todo.append(op.base)
        elif isinstance(op, ir.Vec | ir.CallList):
            todo.extend(op.items)
        elif isinstance(op, ir.Pair):
            todo += [op.first, op.second]


class _Parser(InstructionParser):
    def __init__(self, src: SourceText) -> None:
        self.src = src
        self.toks: list[Token] = tokenize(src)
        self.i = 0
        self.module = ir.Module(source_name=src.name)
        # nested-scope renaming for the function being parsed; ranges[k] holds scope k's large
        # `%r<N>` declarations as (prefix, N, type), materialized name by name in resolve()
        self.scopes: list[dict[str, str]] = []
        self.ranges: list[list[tuple[str, int, str]]] = []
        self.depth = 0  # operand nesting
        self.fresh = 0
        self.cur_loc: tuple[int, int, int] | None = None
        self.func: ir.Function | None = None
        self.vector_regs = False  # the function declares .reg .v2/.v4 registers (operands are expanded)
        self.prelude: list[ir.Instr] = []  # see InstructionParser.place_element

    # ------------------------------------------------------------ token helpers
    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        # never moves past the eof token: every lookahead after it sees eof again, not an IndexError
        t = self.toks[self.i]
        if t[0] != "eof":
            self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.toks[self.i][1] == text

    def accept(self, text: str) -> bool:
        if self.toks[self.i][1] == text:
            self.i += 1
            return True
        return False

    def pos(self, tok: Token | None = None) -> SourcePos:
        return self.src.pos((tok or self.toks[self.i])[2])

    def error(self, expected: str, tok: Token | None = None) -> PTXSyntaxError:
        tok = tok or self.toks[self.i]
        found = tok[1] if tok[0] != "eof" else "end of file"
        return PTXSyntaxError(self.pos(tok), f"expected {expected}, found {found!r}")

    def expect(self, text: str) -> Token:
        if self.toks[self.i][1] != text:
            raise self.error(repr(text))
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.toks[self.i][0] != kind:
            raise self.error(what)
        return self.next()

    def expect_int(self) -> int:
        neg = self.accept("-")
        tok = self.expect_kind("int", "an integer")
        v = self.int_value(tok)
        return -v if neg else v

    def int_value(self, tok: Token) -> int:
        v = int_literal(tok[1])
        if v >= MAX_LITERAL:
            raise PTXSyntaxError(self.pos(tok), "integer constant overflow", tok[1][:40])
        return v

    def expect_count(self, what: str, limit: int = 1 << 63) -> int:
        """A non-negative size or count (array dimension, register range, alignment)."""
        tok = self.peek()
        v = self.expect_int()
        if not 0 <= v < limit:
            raise PTXSyntaxError(self.pos(tok), f"{what} must be between 0 and {limit - 1}, got {v}")
        return v

    def skip_to(self, text: str) -> None:
        while not self.at(text):
            if self.peek()[0] == "eof":
                raise self.error(repr(text))
            self.i += 1
        self.next()

    def skip_braces(self) -> None:
        self.expect("{")
        depth = 1
        while depth:
            t = self.next()
            if t[0] == "eof":
                raise self.error("'}'", t)
            if t[1] == "{":
                depth += 1
            elif t[1] == "}":
                depth -= 1

    # ------------------------------------------------------------ module level
    def parse_module(self) -> ir.Module:
        m = self.module
        first = True
        while self.peek()[0] != "eof":
            tok = self.peek()
            t = tok[1]
            if t == ".version":
                # ptxas: a syntax error anywhere but at the start of the file
                if not first:
                    raise PTXSyntaxError(self.pos(tok), "'.version' must be the first directive of the file")
                self.next()
                m.version = self.expect_kind("float", "a PTX ISA version (e.g. 8.0)")[1]
            elif t == ".target":
                self.next()
                m.target.append(self.expect_kind("ident", "a target name")[1])
                while self.accept(","):
                    m.target.append(self.expect_kind("ident", "a target name")[1])
            elif t == ".address_size":
                self.next()
                tok = self.peek()
                m.address_size = self.expect_int()
                if m.address_size not in (32, 64):  # ptxas: "Illegal value for .address_size directive"
                    raise PTXSyntaxError(self.pos(tok), f".address_size must be 32 or 64, got {m.address_size}")
            elif t == ".file":
                self.next()
                idx = self.expect_int()
                name = self.expect_kind("string", "a file name string")[1][1:-1]
                while self.accept(","):
                    self.expect_int()
                m.files[idx] = name
            elif t == ".section":
                self.next()
                self.next()
                self.skip_braces()
            elif t == ".pragma":
                self.next()
                self.skip_to(";")
            elif t in (".loc",):
                self.parse_loc()
            elif t in _LINKAGE or t in (".entry", ".func") or t in _SPACES or t in (".alias", ".align"):
                self.parse_toplevel_decl()
            elif t == ";":
                self.next()
            else:
                raise self.error("a directive (.version, .target, .entry, .func, .global, ...)")
            first = False
        return m

    def parse_toplevel_decl(self) -> None:
        linkage = ""
        while self.peek()[1] in _LINKAGE:
            linkage = self.next()[1][1:]
        t = self.peek()[1]
        if t == ".entry":
            self.parse_function(linkage, is_entry=True)
        elif t == ".func":
            self.parse_function(linkage, is_entry=False)
        elif t in _SPACES or t == ".align":
            for var in self.parse_var_decl(linkage):
                if var.linkage != "extern" and any(g.name == var.name and g.linkage != "extern"
                                                   for g in self.module.globals):
                    raise PTXValidationError(var.pos, f"duplicate definition of '{var.name}'")
                self.module.globals.append(var)
        elif t == ".alias":
            self.skip_to(";")
        else:
            raise self.error(".entry, .func or a variable declaration")

    # ------------------------------------------------------------ declarations
    def parse_var_decl(self, linkage: str = "") -> list[ir.VarDecl]:
        """`[.align N] .space [.align N] [.v2|.v4] .type name[dims] [= init] (, name...)* ;` (ptxas also
        takes the alignment before the state space; given twice, the larger holds)."""
        align = 0
        if self.at(".align"):
            align = self._alignment()
            if self.peek()[1] not in _SPACES:
                raise self.error("a state space (.global, .shared, .const, .local, .param) after .align")
        start = self.next()
        space = start[1][1:]
        vector = 1
        typ = None
        is_ptr = False
        while self.peek()[0] == "directive":
            d = self.peek()[1]
            if d == ".align":
                align = max(align, self._alignment())
            elif d in (".v2", ".v4", ".v8"):
                self.next()
                vector = int(d[2:])
            elif d[1:] in ir.TYPE_NAMES:
                self.next()
                typ = d[1:]
            elif d in (".ptr",):
                self.next()
                is_ptr = True
            elif d in (".global", ".shared", ".const", ".local", ".attribute"):
                self.next()  # .ptr .global .align N qualifiers
            elif d == ".texref" or d == ".samplerref" or d == ".surfref":
                self.next()
                typ = "b64"
            else:
                break
        if typ is None:
            raise self.error("a type (.b8, .u32, .f32, ...)")
        out = []
        while True:
            name_tok = self.expect_kind("ident", "a variable name")
            var = ir.VarDecl(space, self.declare(name_tok[1]), typ, self.pos(start), align, [], vector,
                             None, linkage, is_ptr)
            if self.at("<"):  # .param .b32 name<N> is not valid; .reg-like ranges appear only in .reg
                raise self.error("'[', '=' or ';'")
            while self.accept("["):
                if len(var.dims) >= MAX_DIMS:
                    raise self.error(f"at most {MAX_DIMS} array dimensions")
                if self.accept("]"):
                    var.dims.append(None)
                else:
                    var.dims.append(self.expect_count("an array dimension"))
                    self.expect("]")
            if self.accept("="):
                self.parse_initializer(var)
            elif 0 in var.dims and linkage != "extern" and space != "param":
                raise PTXSyntaxError(var.pos, f"non-external variable '{var.name}' has incomplete type "
                                     f"(a [0] dimension)")
            out.append(var)
            in_param_list = space in ("param", "reg") and self.func is None
            if in_param_list or not self.accept(","):
                break
        if space not in ("param", "reg") or self.func is not None:
            self.expect(";")
        return out

    def parse_initializer(self, var: ir.VarDecl) -> None:
        parse_initializer(self, var)

    def parse_param_list(self) -> list[ir.VarDecl]:
        params: list[ir.VarDecl] = []
        self.expect("(")
        if self.accept(")"):
            return params
        while True:
            if not self.at(".param") and not self.at(".reg"):
                raise self.error("'.param'")
            for p in self.parse_var_decl():
                if any(q.name == p.name for q in params):
                    raise PTXValidationError(p.pos, f"duplicate parameter '{p.name}'")
                params.append(p)
            if self.accept(")"):
                return params
            self.expect(",")

    # ------------------------------------------------------------ functions
    def parse_function(self, linkage: str, is_entry: bool) -> None:
        start = self.next()
        rets: list[ir.VarDecl] = []
        if not is_entry and self.at("("):
            rets = self.parse_param_list()
        name = self.expect_kind("ident", "a function name")[1]
        fn = ir.Function(name, is_entry, self.pos(start), linkage, rets=rets)
        if self.at("("):
            fn.params = self.parse_param_list()
        if is_entry and any(p.space == "reg" for p in fn.params):
            raise PTXSyntaxError(fn.pos, f"kernel '{name}': .entry parameters must be .param, not .reg")
        while self.peek()[1] in _PERF:
            d = self.next()[1]
            if d == ".pragma":
                self.skip_to(";")
                continue
            vals = []
            if self.peek()[0] == "int":
                vals.append(self.expect_int())
                while self.accept(","):
                    vals.append(self.expect_int())
            fn.perf[d[1:]] = tuple(vals)
        prev = self.module.functions.get(name)
        if self.accept(";"):
            if prev is None:
                self.module.functions[name] = fn
            return
        if prev is not None and prev.body is not None:
            raise PTXSyntaxError(self.pos(start), f"function '{name}' is defined twice")
        self.module.functions[name] = fn
        regvals = reg_params(fn)
        self.parse_body(fn)
        if regvals:
            bind_reg_params(fn, regvals)

    def declare(self, name: str, shown: str | None = None) -> str:
        """Register a declaration in the innermost scope; nested scopes get fresh names.  A name declared
        twice in one scope is refused, as ptxas does ("Duplicate definition"; `shown`: a range's name)."""
        if self.scopes and name in self.scopes[-1]:
            raise PTXValidationError(self.pos(self.toks[self.i - 1]),
                                     f"duplicate definition of '{shown or name}' in this scope")
        if len(self.scopes) <= 1:
            if self.scopes:
                self.scopes[0][name] = name
            return name
        self.fresh += 1
        new = f"{name}${self.fresh}"
        self.scopes[-1][name] = new
        return new

    def resolve(self, name: str) -> str:
        for k in range(len(self.scopes) - 1, -1, -1):
            r = self.scopes[k].get(name)
            if r is not None:
                return r
            if self.ranges[k]:
                r = self.from_range(name, k)
                if r is not None:
                    return r
        return name

    def from_range(self, name: str, k: int) -> str | None:
        """Declare `name` if scope k has a large range that contains it (%r<N> holds %r0..%r{N-1})."""
        assert self.func is not None
        for prefix, count, typ in self.ranges[k]:
            if (name.startswith(prefix) and DECIMAL.fullmatch(name, len(prefix))
                    and decimal_below(name[len(prefix):], count)):
                new = name
                if k > 0:  # nested scope: renamed apart, as declare() does
                    self.fresh += 1
                    new = f"{name}${self.fresh}"
                self.scopes[k][name] = new
                self.func.regs[new] = typ
                return new
        return None

    def is_reg(self, name: str) -> bool:
        return self.func is not None and name in self.func.regs

    def parse_body(self, fn: ir.Function) -> None:
        self.func = fn
        self.vector_regs = False
        self.scopes = [{}]
        self.ranges = [[]]
        self.cur_loc = None
        body: list[ir.Instr | ir.Label] = []
        fn.body = body
        self.expect("{")
        depth = 1
        while True:
            tok = self.peek()
            t = tok[1]
            kind = tok[0]
            if t == "}":
                self.next()
                depth -= 1
                if depth == 0:
                    break
                self.scopes.pop()
                self.ranges.pop()
                continue
            if t == "{":
                self.next()
                depth += 1
                self.scopes.append({})
                self.ranges.append([])
                continue
            if kind == "directive":
                self.parse_body_directive(fn)
                continue
            if kind == "eof":
                raise self.error("'}' closing the function body")
            if kind == "ident" and self.peek(1)[1] == ":":
                self.next()
                self.next()
                if self.at(".callprototype"):
                    self.skip_to(";")
                    continue
                if self.accept(".branchtargets"):
                    targets = [self.expect_kind("ident", "a label")[1]]
                    while self.accept(","):
                        targets.append(self.expect_kind("ident", "a label")[1])
                    self.expect(";")
                    fn.branch_tables[tok[1]] = targets
                    continue
                body.append(ir.Label(tok[1], self.pos(tok)))
                continue
            ins = self.parse_instruction()
            if self.prelude:
                body.extend(self.prelude)
                self.prelude.clear()
            body.append(ins)
        if self.ranges[0]:  # registers of a function-level range used before its declaration
            for st in body:
                if isinstance(st, ir.Instr):
                    for name in _reg_names(st):
                        if name not in fn.regs:
                            self.from_range(name, 0)
        if any(isinstance(st, ir.Instr) and st.opcode == "call" for st in body):
            fn.body = body = calls_through_params(fn, body, self.module.functions)
        self.func = None
        self.scopes = []
        self.ranges = []

    def parse_body_directive(self, fn: ir.Function) -> None:
        t = self.peek()[1]
        if t == ".reg":
            self.parse_reg_decl(fn)
        elif t in _SPACES or t == ".align":
            fn.vars.extend(self.parse_var_decl())
        elif t == ".loc":
            self.parse_loc()
        elif t == ".pragma":
            self.next()
            self.skip_to(";")
        elif t in (".maxntid", ".reqntid", ".minnctapersm", ".maxnreg"):
            self.skip_to(";")
        else:
            raise self.error("a declaration (.reg, .local, .shared, .param) or an instruction")

    def _alignment(self) -> int:
        """`.align N` (at the directive): N, a power of two."""
        self.next()
        tok = self.peek()
        align = self.expect_count("an alignment", 1 << 32)
        if align & (align - 1) or align == 0:  # ptxas: "Alignment must be a power of two"
            raise PTXSyntaxError(self.pos(tok), f"alignment must be a power of two, got {align}")
        return align

    def parse_reg_decl(self, fn: ir.Function) -> None:
        self.next()
        vector = 1
        typ = None
        while self.peek()[0] == "directive":
            d = self.next()[1]
            if d in (".v2", ".v4"):
                vector = int(d[2:])
            elif d[1:] in ir.TYPE_NAMES:
                typ = d[1:]
            else:
                raise self.error("a register type", self.toks[self.i - 1])
        if typ is None:
            raise self.error("a register type (.b32, .f32, .pred, ...)")
        if vector != 1:
            self.vector_regs = True  # one scalar register per element: %v.x, %v.y (vector_operand)
        comps = [""] if vector == 1 else [f".{c}" for c in "xyzw"[:vector]]
        while True:
            name = self.expect_kind("ident", "a register name")[1]
            if vector != 1:
                if self.accept("<"):
                    count = self.expect_count("a register count", LAZY_RANGE)
                    self.expect(">")
                    names = [f"{name}{k}" for k in range(count)]
                else:
                    names = [name]
                for n in names:
                    for c in comps:
                        fn.regs[self.declare(n + c)] = typ
            elif self.accept("<"):
                count = self.expect_count("a register count", 1 << 32)
                self.expect(">")
                if count > LAZY_RANGE:
                    self.ranges[-1].append((name, count, typ))
                else:
                    for k in range(count):
                        fn.regs[self.declare(f"{name}{k}", f"{name}<{count}>")] = typ
            else:
                fn.regs[self.declare(name)] = typ
            if not self.accept(","):
                break
        self.expect(";")

    def parse_loc(self) -> None:
        self.next()
        f = self.expect_int()
        line = self.expect_int()
        col = self.expect_int()
        while self.accept(","):
            # function_name <label>, inlined_at f l c
            t = self.next()
            if t[1] == "inlined_at":
                self.expect_int()
                self.expect_int()
                self.expect_int()
            elif t[1] == "function_name":
                self.next()
        self.cur_loc = (f, line, col)
