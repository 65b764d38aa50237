"""Mutators: corpus PTX text -> a mutant, deterministically from a seeded random.Random.

Each mutant applies 1-3 mutations drawn from line-level edits (delete, duplicate, swap, splice from
another file), token-level edits (opcodes, modifiers, types, registers, immediates with extreme values,
labels, braces, directives), structural stress (deep nesting, huge register ranges and array sizes,
huge address offsets) and truncation.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS_GLOBS = ("corpus/ptx*/*.ptx", "examples/*.ptx", "tests/data/*.ptx")

_TOKEN = re.compile(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|\d+\.\d*|0[xX][0-9a-fA-F]+|\d+"
                    r"|[%$A-Za-z_][\w$]*(?:\.[\w$]+)*|\.[A-Za-z_][\w$]*|[{}()\[\];,:<>+\-|!@=]")
_INT = re.compile(r"(?<![\w.$%])-?\d+(?![\w.])")

# boundary and malformed numerals: what a literal in PTX could be pushed to
EXTREME_INTS = ["0", "1", "-1", "7", "8", "09", "010", "0x", "0b2", "0xFFFFFFFF", "2147483647", "2147483648",
                "-2147483648", "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
                "-9223372036854775808", "18446744073709551615", "18446744073709551616", "1" + "0" * 40,
                "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "1U", "0b1111", "65535", "65536", "1024",
                "1e400", "1.5", "-0.0", "0f7FC00000", "0f00000000", "0d7FF0000000000000", "0fFFFFFFFF"]
DIRECTIVES = [".version 8.0", ".version", ".target sm_90", ".target", ".address_size 64", ".address_size 32",
              ".entry", ".func", ".reg .b32 %r<4>;", ".reg .b32 %r<10000000>;", ".reg", ".global", ".shared",
              ".local", ".param", ".const", ".loc 1 2 3", ".file 1 \"x.cu\"", ".pragma \"nounroll\";",
              ".maxntid 1024, 1, 1", ".reqntid 32", ".align 4", ".align 0", ".align 3", ".v4", ".b8",
              ".weak", ".visible", ".extern", ".section", ".branchtargets", ".callprototype"]
PUNCT = ["{", "}", "(", ")", "[", "]", ";", ",", ":", "<", ">", "+", "-", "|", "!", "@", "="]
MODIFIERS = [".rn", ".rz", ".rm", ".rp", ".ftz", ".sat", ".approx", ".full", ".wide", ".lo", ".hi", ".global",
             ".shared", ".local", ".const", ".param", ".v2", ".v4", ".v8", ".sync", ".aligned", ".uni", ".cta",
             ".gpu", ".sys", ".relaxed", ".acquire", ".release", ".volatile", ".nc", ".cs", ".x", ".y", ".z"]
TYPES = ["b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
         "f16x2", "bf16", "f32", "f64", "pred", "tf32", "e4m3", "q32"]


@dataclass
class Pools:
    """What token mutations draw from, gathered once from the corpus."""

    files: list[tuple[str, str]]
    opcodes: list[str]
    registers: list[str]
    labels: list[str]
    lines: list[str]


def load_corpus(root: Path = REPO) -> Pools:
    files = []
    for g in CORPUS_GLOBS:
        for p in sorted(root.glob(g)):
            files.append((str(p.relative_to(root)), p.read_text()))
    opcodes, regs, labels, lines = set(), set(), set(), []
    for _, text in files:
        for line in text.splitlines():
            s = line.strip()
            if not s or s.startswith("//"):
                continue
            lines.append(s)
            m = re.match(r"(?:@!?%\w+\s+)?([a-z][\w.]*)\s", s)
            if m and not s.endswith(":"):
                opcodes.add(m.group(1))
            regs.update(re.findall(r"%[a-z]+\d+", s))
            if re.fullmatch(r"\$?[\w$]+:", s):
                labels.add(s[:-1])
    return Pools(files, sorted(opcodes), sorted(regs), sorted(labels), lines)


def _tok_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(line)]


def _replace_token(rng: random.Random, line: str, pools: Pools) -> str:
    spans = _tok_spans(line)
    if not spans:
        return line
    a, b = rng.choice(spans)
    tok = line[a:b]
    if tok[:1].isdigit() or tok[:1] == "-":
        new = rng.choice(EXTREME_INTS)
    elif tok.startswith("%"):
        new = rng.choice(pools.registers + ["%tid.x", "%ctaid.y", "%laneid", "%r99999", "%p1", "%fd1", "_"])
    elif tok.startswith(".") and len(tok) > 1:
        new = rng.choice([*MODIFIERS, *("." + t for t in TYPES), *(d.split()[0] for d in DIRECTIVES)])
    elif "." in tok:  # an opcode with modifiers: change one part, or the whole opcode
        parts = tok.split(".")
        r = rng.random()
        if r < 0.3:
            new = rng.choice(pools.opcodes)
        elif r < 0.6:
            parts[rng.randrange(len(parts))] = rng.choice(TYPES + [m[1:] for m in MODIFIERS])
            new = ".".join(parts)
        elif r < 0.8 and len(parts) > 1:
            del parts[rng.randrange(1, len(parts))]
            new = ".".join(parts)
        else:
            parts.insert(rng.randrange(1, len(parts) + 1), rng.choice(TYPES + [m[1:] for m in MODIFIERS]))
            new = ".".join(parts)
    elif tok[:1].isalpha() or tok[:1] in "$_":
        new = rng.choice(pools.opcodes + pools.labels + ["bra", "ret", "exit", "call", "generic"])
    else:
        new = rng.choice(PUNCT + [""])
    return line[:a] + new + line[b:]


def _number(rng: random.Random, line: str) -> str:
    ms = list(_INT.finditer(line))
    if not ms:
        return line
    m = rng.choice(ms)
    return line[:m.start()] + rng.choice(EXTREME_INTS) + line[m.end():]


def mutate_once(rng: random.Random, text: str, pools: Pools) -> tuple[str, str]:
    """One mutation; returns (new text, description)."""
    lines = text.split("\n")
    n = len(lines)
    i = rng.randrange(n)
    kind = rng.choices(
        ["delete", "duplicate", "swap", "splice", "token", "token", "token", "number", "number", "directive",
         "punct", "truncate", "nest", "regrange", "bigarray", "offset", "initializer"],
    )[0]
    if kind == "delete":
        k = rng.choice([1, 1, 1, 2, 5])
        del lines[i:i + k]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = rng.randrange(n)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "splice":
        lines.insert(i, rng.choice(pools.lines))
    elif kind == "token":
        lines[i] = _replace_token(rng, lines[i], pools)
    elif kind == "number":
        cands = [k for k, ln in enumerate(lines) if _INT.search(ln)]
        if cands:
            i = rng.choice(cands)
            lines[i] = _number(rng, lines[i])
    elif kind == "directive":
        lines.insert(i, rng.choice(DIRECTIVES))
    elif kind == "punct":
        ln = lines[i]
        p = rng.randrange(len(ln) + 1)
        if ln and rng.random() < 0.5:  # delete one character
            lines[i] = ln[:p] + ln[p + 1:]
        else:
            lines[i] = ln[:p] + rng.choice(PUNCT) + ln[p:]
    elif kind == "truncate":
        cut = rng.randrange(len(text) + 1)
        return text[:cut], f"truncate@{cut}"
    elif kind == "nest":
        depth = rng.choice([2, 50, 1000, 5000])
        lines.insert(i, "{" * depth + "\n" + "}" * depth * rng.choice([0, 1, 1]))
        kind += str(depth)
    elif kind == "regrange":
        cands = [k for k, ln in enumerate(lines) if re.search(r"<\d+>", ln)]
        if cands:
            i = rng.choice(cands)
            lines[i] = re.sub(r"<\d+>", "<" + rng.choice(["0", "100000", "10000000", "4294967296"]) + ">",
                              lines[i], count=1)
    elif kind == "bigarray":
        cands = [k for k, ln in enumerate(lines) if re.search(r"\[\d+\]", ln)]
        if cands:
            i = rng.choice(cands)
            lines[i] = re.sub(r"\[\d+\]", "[" + rng.choice(["0", "1", "1000000000", "4294967296",
                                                             "9223372036854775807"]) + "]", lines[i], count=1)
    elif kind == "offset":
        cands = [k for k, ln in enumerate(lines) if re.search(r"\[%\w+(\+-?\d+)?\]", ln)]
        if cands:
            i = rng.choice(cands)
            off = rng.choice(["+9223372036854775807", "+-9223372036854775808", "+18446744073709551615",
                              "+4294967296", "-1", "+2147483648", "+18446744073709551616"])
            lines[i] = re.sub(r"\[(%\w+)(\+-?\d+)?\]", lambda m: f"[{m.group(1)}{off}]", lines[i], count=1)
    elif kind == "initializer":
        vals = rng.choice(["{1, 2, 3}", "{" + ", ".join(["7"] * 40) + "}", "{1.5}", "{{1,2},{3,4}}", "{}",
                           "{0f3F800000}", "{-9223372036854775808}", "{x}"])
        typ = rng.choice(["b8", "u32", "f32", "b64", "f16"])
        dims = rng.choice(["[0]", "[]", "[3]", "[2][2]", "", "[1000000]"])
        lines.insert(i, f".global .{typ} fz_g{rng.randrange(1000)}{dims} = {vals};")
    return "\n".join(lines), f"{kind}@{i + 1}"


def make_mutant(seed: int, index: int, pools: Pools) -> tuple[str, str, str]:
    """Mutant number `index` of the run seeded `seed`: (source file, description, text).

    Depends only on (seed, index), so a run is reproducible whatever the parallelism."""
    rng = random.Random(f"{seed}:{index}")
    name, text = rng.choice(pools.files)
    desc = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text, d = mutate_once(rng, text, pools)
        desc.append(d)
    return name, " ".join(desc), text
