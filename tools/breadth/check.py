"""Classify every breadth-corpus form (tests/data/breadth/*.ptx): runs, refused at load by name
and place, or anything else.

    .venv/bin/python tools/breadth/check.py              # summary + the "other" forms
    .venv/bin/python tools/breadth/check.py --markdown   # the README's list of refused instructions
    .venv/bin/python tools/breadth/check.py -v           # every form's verdict

- runs: `Module(...)` loads the kernel and a launch of one block (1 thread, or the warp/warpgroup a
  .sync.aligned collective needs; `// block:` in the file) on a zeroed 4 KiB buffer returns;
- refused: loading raises UnsupportedInstructionError (valid PTX that ptxjit does not run) whose
  position is the form's own file and line and whose message names its opcode;
- other: anything else - InvalidInstructionError (every kernel is valid PTX: ptxas accepted it), a
  refusal naming another place, a refusal only at launch, an internal exception, a launch error,
  timeout or crash.  Launches run in a child process so that a crash is a verdict, not the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "breadth"
MARK = "// form"
TIMEOUT = 20.0  # seconds per launch (a wait that never completes is a verdict too)


@dataclass
class Verdict:
    form: str
    file: str
    line: int
    opcode: str
    cls: str  # "runs" | "refused" | "other"
    detail: str = ""


def form_info(path: Path) -> tuple[str, int, int, str]:
    """(form name, block size, subject line (1-based), subject instruction text) of a corpus file."""
    text = path.read_text()
    name = re.search(r"^// breadth form: (\S+)", text, re.M)
    block = re.search(r"^// block: (\d+)", text, re.M)
    for i, ln in enumerate(text.split("\n"), 1):
        if ln.rstrip().endswith(MARK):
            instr = ln.split(MARK)[0].strip()
            return (name.group(1) if name else path.stem, int(block.group(1)) if block else 1, i, instr)
    raise SystemExit(f"{path}: no line ends with '{MARK}'")


def handle_object(desc: str) -> object:
    """The texture/surface object a `// handle: kind geometry CxBITS kind` line describes: a 16 (x 8)
    CUDA array of zeros with C channels of BITS bits (f float, u unsigned), point sampling, clamp."""
    from ptxjit import texture as tx

    kind, geom, fmt, fk = desc.split()
    chans, bits = (int(x) for x in fmt.split("x"))
    widths = [bits] * chans + [0] * (4 - chans)
    ch = tx.ChannelFormatDescriptor(*widths, tx.cudaChannelFormatKindFloat if fk == "f"
                                    else tx.cudaChannelFormatKindUnsigned)
    arr = tx.CUDAarray(ch, 16, 8 if geom == "2d" else 0)
    res = tx.ResourceDescriptor(tx.cudaResourceTypeArray, cuArr=arr)
    if kind == "surface":
        return tx.SurfaceObject(res)
    return tx.TextureObject(res, tx.TextureDescriptor((tx.cudaAddressModeClamp,) * arr.ndim))


def opcode_of(instr: str) -> str:
    return re.sub(r"^@!?%\w+\s+", "", instr).split()[0].rstrip(";").split(".")[0]


def classify(path: Path) -> Verdict:
    """Load and launch one corpus kernel in this process."""
    import numpy as np

    from ptxjit.api import Module
    from ptxjit.errors import InvalidInstructionError, KernelError, UnsupportedInstructionError

    name, block, line, instr = form_info(path)
    op = opcode_of(instr)
    v = Verdict(name, path.name, line, op, "other")
    try:
        m = Module(path.read_text(), str(path))
    except InvalidInstructionError as e:
        v.detail = f"refused as invalid PTX (ptxas accepts it): {e}"
        return v
    except UnsupportedInstructionError as e:
        # the error lists every refused instruction (a form's set-up line may be refused too): the
        # form's own file:line must be among them, naming its opcode
        where = f"{path}:{line}:"
        mine = [ln.strip() for ln in str(e).split("\n") if ln.strip().startswith(where)]
        if not mine:
            v.detail = f"refused, but not at {path.name}:{line}: {str(e).splitlines()[0]}"
        elif f"'{op}" not in mine[0]:
            v.detail = f"refusal does not name '{op}': {mine[0]}"
        else:
            v.cls, v.detail = "refused", mine[0][len(where):].split(": ", 1)[-1]
        return v
    except Exception as e:  # an internal exception (or another PTXError) is a defect either way
        v.detail = f"load raised {type(e).__name__}: {str(e)[:300]}"
        return v
    store = np.zeros(4096 + 128, dtype=np.uint8)
    off = -store.ctypes.data % 128
    buf = store[off:off + 4096]  # 128-byte aligned, as a tensor map must be
    keep = None
    if ".tensor." in instr:  # the TMA forms' [%rd1, ...] names a tensor map: a valid one, of a 2-D array
        from ptxjit.lower.rules.tma import encode_tensor_map
        from ptxjit.lower.rules.tma_im2col import encode_im2col_tensor_map

        rank = int(re.search(r"\.(\d)d\.", instr).group(1))  # type: ignore[union-attr]
        keep = np.zeros((8,) * (rank - 1) + (16,), dtype=np.uint32)
        if ".im2col" in instr:  # an im2col map (C, W[, H[, D]], N): 16 channels x 4 pixels
            tm = encode_im2col_tensor_map(keep, [0] * (rank - 2), [0] * (rank - 2), 16, 4)
        else:
            tm = encode_tensor_map(keep, [16] + [2] * (rank - 1))
        buf[:128] = np.frombuffer(bytes(tm.raw), dtype=np.uint8)
    try:
        handle = re.search(r"^// handle: (.+)$", path.read_text(), re.M)
        args = (buf, handle_object(handle.group(1))) if handle else (buf,)
        m.get_function("k")(1, block, args, timeout=TIMEOUT)
        del keep, args
    except UnsupportedInstructionError as e:
        v.detail = f"refused only at launch: {str(e)[:300]}"
        return v
    except KernelError as e:
        v.detail = f"launch failed: {type(e).__name__}: {str(e)[:300]}"
        return v
    except Exception as e:
        v.detail = f"launch raised {type(e).__name__}: {str(e)[:300]}"
        return v
    v.cls = "runs"
    return v


def _worker(files: list[str]) -> None:
    for f in files:
        print("START " + f, flush=True)
        v = classify(Path(f))
        print("VERDICT " + json.dumps(v.__dict__), flush=True)


FORM_DEADLINE = 300.0  # seconds one form may take in the child (translation included) before it is killed


def check_all(files: list[Path] | None = None, jobs: int | None = None) -> list[Verdict]:
    """Classify every file in child processes (`jobs` at once; default: the cores, at most 4); a child
    that dies or hangs takes only its current form.  Verdicts come in file order."""
    paths = [str(p) for p in (files if files is not None else sorted(CORPUS.glob("*.ptx")))]
    n = max(1, min(jobs or min(os.cpu_count() or 1, 4), len(paths)))
    with cf.ThreadPoolExecutor(n) as ex:
        parts = list(ex.map(_check_chunk, [paths[k::n] for k in range(n)]))
    order = {Path(p).name: i for i, p in enumerate(paths)}
    return sorted((v for part in parts for v in part), key=lambda v: order[v.file])


def _check_chunk(todo: list[str]) -> list[Verdict]:
    todo = list(todo)
    out: list[Verdict] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    while todo:
        with tempfile.TemporaryFile("w+") as errf:  # a file, not a pipe: warnings cannot fill it and block
            proc = subprocess.Popen([sys.executable, __file__, "--worker", *todo], stdout=subprocess.PIPE,
                                    stderr=errf, text=True, env=env)
            lines: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
            current, hung = None, False
            while True:
                try:
                    ln = lines.get(timeout=FORM_DEADLINE)
                except queue.Empty:  # no verdict in time: the form hangs (outside the launch's own timeout)
                    proc.kill()
                    hung = True
                    break
                if ln is None:
                    break
                if ln.startswith("START "):
                    current = ln[6:].strip()
                elif ln.startswith("VERDICT ") and current is not None:
                    out.append(Verdict(**json.loads(ln[8:])))
                    todo.remove(current)
                    current = None
            proc.wait()
            errf.seek(0)
            err = errf.read()
        if current is not None:  # the child died (or hung) inside this form
            p = Path(current)
            name, _, line, instr = form_info(p)
            tail = err.strip().splitlines()[-1:] or [""]
            what = f"hung for {FORM_DEADLINE:.0f} s" if hung else f"crashed the process (exit {proc.returncode})"
            out.append(Verdict(name, p.name, line, opcode_of(instr), "other", f"{what}: {tail[0][:200]}"))
            todo.remove(current)
        elif todo:
            raise RuntimeError(f"breadth worker failed before any form (exit {proc.returncode}): {err[-2000:]}")
    return out


def _pump(proc: subprocess.Popen, lines: queue.Queue) -> None:
    assert proc.stdout is not None
    for ln in proc.stdout:
        lines.put(ln)
    lines.put(None)


def markdown(verdicts: list[Verdict]) -> str:
    """The README's list: refused instruction forms grouped by opcode, and the count that run."""
    runs = [v for v in verdicts if v.cls == "runs"]
    refused: dict[str, list[str]] = {}
    for v in verdicts:
        if v.cls == "refused":
            refused.setdefault(v.opcode, []).append(v.form)
    nref = sum(map(len, refused.values()))
    head = (f"**Breadth check** (`tools/breadth/check.py`, `tests/test_breadth.py`): of {len(verdicts)} forms of "
            f"PTX ISA 8.x for sm_90 (`tests/data/breadth`: one kernel each, every one accepted by `ptxas "
            f"-arch=sm_90a`, launched on one block) **{len(runs)}\0run** and {nref} {'is' if nref == 1 else 'are'} "
            f"refused at load with {'its' if nref == 1 else 'their'} name and file:line; none does anything else "
            f"(refused as invalid PTX, "
            f"refused only at launch, an internal error, a crash: the test fails on those). Refused:")
    lines = [ln.replace("\0", " ") for ln in textwrap.wrap(head, 115, break_on_hyphens=False)] + [""]
    for op in sorted(refused):
        forms = ", ".join(f"`{f}`" for f in sorted(refused[op]))
        lines.append(f"- `{op}`: {forms}")
    lines += ["", "(`.venv/bin/python tools/breadth/check.py --markdown` prints this list.)"]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("files", nargs="*", type=Path)
    a = ap.parse_args()
    if a.worker is not None:
        _worker(a.worker)
        return 0
    vs = check_all(a.files or None)
    if a.markdown:
        print(markdown(vs))
    counts = {c: sum(v.cls == c for v in vs) for c in ("runs", "refused", "other")}
    out = sys.stderr if a.markdown else sys.stdout  # --markdown: stdout holds only the Markdown
    for v in vs:
        if a.v or v.cls == "other":
            print(f"{v.cls:8} {v.form:45} {v.file}:{v.line}  {v.detail}", file=out)
    print(f"{len(vs)} forms: {counts['runs']} run, {counts['refused']} refused at load, {counts['other']} other",
          file=out)
    return 1 if counts["other"] else 0


if __name__ == "__main__":
    sys.exit(main())
