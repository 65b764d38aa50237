"""Generate the breadth corpus: one minimal kernel per PTX ISA 8.x sm_90 instruction form
(tools/breadth/forms.py), each validated with `ptxas -arch=sm_90a`, written to tests/data/breadth/.

    .venv/bin/python tools/breadth/gen.py            # regenerate (needs ptxas)
    .venv/bin/python tools/breadth/gen.py --check    # only report which forms ptxas refuses

A form ptxas refuses is a mistake in forms.py: the script lists it with ptxas's message and exits 1
without writing anything, so that the committed corpus is always valid PTX.  Each file's subject
line ends with `// form`; a header comment names the form and the launch block size.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from forms import FORMS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "breadth"
MARK = "// form"

# The kernel around every form.  Registers start at small non-zero values so that divisions and
# shifts have ordinary operands; %p1 is true (the `@!%p1 trap;` forms never trap).
_PROLOGUE = """\
  .reg .pred %p<8>;
  .reg .b16 %h<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<64>;
  .reg .f64 %fd<8>;
  .reg .b128 %q<4>;
  .shared .align 128 .b8 sbuf[4096];
  .local .align 16 .b8 lbuf[64];
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r20, sbuf;
  mov.u64 %rd4, sbuf;
  cvta.shared.u64 %rd5, %rd4;
  mov.u32 %r0, 0;
  mov.u32 %r1, 1;
  mov.u32 %r2, 2;
  mov.u32 %r3, 3;
  mov.u64 %rd2, 2;
  mov.u64 %rd3, 3;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40000000;
  mov.f32 %f3, 0f40400000;
  mov.f64 %fd1, 0d3FF0000000000000;
  mov.f64 %fd2, 0d4000000000000000;
  mov.f64 %fd3, 0d4008000000000000;
  mov.b16 %h1, 0x3C00;
  mov.b16 %h2, 0x4000;
  mov.b16 %h3, 0x4200;
  setp.eq.u32 %p1, %r1, 1;
"""


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name.replace("::", "_"))


def kernel(name: str, body: str, block: int, handle: str = "") -> str:
    lines = body.split("\n")
    marked = [i for i, ln in enumerate(lines) if ln.startswith("> ")]
    subject = marked[0] if marked else 0
    if not marked and len(lines) > 1:
        raise SystemExit(f"forms.py: form '{name}' has several lines and no '> ' subject line")
    out = []
    for i, ln in enumerate(lines):
        ln = ln[2:] if i == subject and ln.startswith("> ") else ln
        if ln.endswith(":"):  # a label
            out.append(ln)
        else:
            out.append("  " + ln + (f"  {MARK}" if i == subject else ""))
    helper = ""
    params, head = ".param .u64 p", f"// breadth form: {name}\n// block: {block}\n"
    if handle:  # the texture/surface handle: a parameter the launch passes an object for
        params += ", .param .u64 h"
        head += f"// handle: {handle}\n"
        out.insert(0, "  ld.param.u64 %rd9, [h];")
        out = [ln.replace("%th", "%rd9") for ln in out]
    if "fn1" in body:
        helper = (".func (.reg .b32 r) fn1(.reg .b32 a)\n{\n  add.u32 r, a, 1;\n  ret;\n}\n\n")
    return (f"{head}.version 8.7\n.target sm_90a\n.address_size 64\n\n"
            ".global .align 4 .u32 gvar;\n.const .align 4 .u32 cvar = 7;\n\n"
            f"{helper}.visible .entry k({params})\n{{\n{_PROLOGUE}" + "\n".join(out) + "\n  ret;\n}\n")


def ptxas_path() -> str:
    for cand in (shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas",
                 str(ROOT / ".venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas")):
        if cand and os.path.exists(cand):
            return cand
    raise SystemExit("ptxas not found (PATH, /usr/local/cuda/bin, or the nvidia-cuda-nvcc wheel in .venv)")


def ptxas_ok(ptxas: str, text: str) -> str | None:
    """None when ptxas accepts `text` for sm_90a, else its message."""
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "k.ptx"
        src.write_text(text)
        r = subprocess.run([ptxas, "-arch=sm_90a", "-o", str(Path(td) / "k.cubin"), str(src)],
                           capture_output=True, text=True, timeout=120)
        return None if r.returncode == 0 else (r.stderr or r.stdout).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="validate only, write nothing")
    ap.add_argument("-j", type=int, default=2, help="parallel ptxas runs")
    a = ap.parse_args()
    names = [n for n, *_ in FORMS]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"forms.py: duplicate form names {sorted(dup)}")
    texts = {slug(form[0]): kernel(*form) for form in FORMS}
    ptxas = ptxas_path()
    with cf.ThreadPoolExecutor(a.j) as ex:
        verdicts = dict(zip(texts, ex.map(lambda t: ptxas_ok(ptxas, t), texts.values()), strict=True))
    bad = {k: v for k, v in verdicts.items() if v}
    for k, v in bad.items():
        print(f"ptxas refuses {k}: {v}")
    print(f"{len(texts) - len(bad)}/{len(texts)} forms accepted by {ptxas} -arch=sm_90a")
    if bad or a.check:
        return 1 if bad else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.ptx"):
        old.unlink()
    for k, t in texts.items():
        (OUT / f"{k}.ptx").write_text(t)
    print(f"wrote {len(texts)} kernels to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
