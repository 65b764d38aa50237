#!/usr/bin/env python3
"""Regenerate the PTX corpus under corpus/ from the CUDA sources in corpus/*.cu.

Producers:
  * nvcc (CUDA 13, at /usr/local/bin/nvcc or $NVCC):  corpus/ptx/<name>.ptx, -arch=sm_80 -lineinfo -O3,
    plus a few extra targets (sm_75, sm_90) named <name>_smXX.ptx.
  * NVRTC through ctypes, from the pip wheels (no CUDA toolkit needed):
      - nvidia-cuda-nvrtc-cu12 (12.9, emits PTX ISA 8.8): compute_80 -> corpus/ptx_nvrtc/<name>.ptx and
        compute_52 -> corpus/ptx_nvrtc/<name>_sm52.ptx (CUDA 13 dropped sm_5x, so NVRTC 12 covers it);
      - nvidia-cuda-nvrtc (13.x, emits PTX ISA 9.x): compute_80 -> corpus/ptx_nvrtc/<name>_nvrtc13.ptx.
Every output is then checked with ptxas (PTX whose .version is newer than ptxas knows is checked on a
copy whose .version line is lowered to the one ptxas supports).

Usage: python scripts/gen_corpus.py [--no-nvcc] [--no-nvrtc] [--no-check]
Tests never run this; they load the committed .ptx files.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
PTX = CORPUS / "ptx"
PTX_NVRTC = CORPUS / "ptx_nvrtc"

NVCC_FLAGS = ["-lineinfo", "-O3"]
# (source stem, arch, output name) for nvcc; every *.cu is also built for sm_80 as <stem>.ptx.
NVCC_EXTRA = [
    ("halfprec", "sm_90", "halfprec_sm90"),
    ("warpvote", "sm_90", "warpvote_sm90"),
    ("scan", "sm_75", "scan_sm75"),
]
# (source stem, arch, output name, nvrtc major)
NVRTC_JOBS = [
    ("elementwise", "compute_80", "elementwise", 12),
    ("scan", "compute_80", "scan", 12),
    ("intrinsics", "compute_80", "intrinsics", 12),
    ("reduce", "compute_80", "reduce", 12),
    ("elementwise", "compute_52", "elementwise_sm52", 12),
    ("atomics", "compute_52", "atomics_sm52", 12),
    ("matmul", "compute_80", "matmul_nvrtc13", 13),
    ("devfuncs", "compute_80", "devfuncs_nvrtc13", 13),
]


def site_dirs() -> list[Path]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    dirs.update(p for p in sys.path if p.endswith("site-packages"))
    return [Path(d) for d in dirs if Path(d).is_dir()]


def find_nvrtc(major: int) -> Path:
    # nvidia-cuda-nvrtc (13.x) -> nvidia/cu13/lib; nvidia-cuda-nvrtc-cu12 -> nvidia/cuda_nvrtc/lib.
    pats = {13: ["nvidia/cu13/lib/libnvrtc.so.13*"], 12: ["nvidia/cuda_nvrtc/lib/libnvrtc.so.12*"]}[major]
    for d in site_dirs():
        for pat in pats:
            hits = sorted(glob.glob(str(d / pat)))
            if hits:
                return Path(hits[0])
    raise FileNotFoundError(f"libnvrtc.so.{major} not found; pip install "
                            + ("nvidia-cuda-nvrtc" if major == 13 else "nvidia-cuda-nvrtc-cu12"))


class Nvrtc:
    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(rc).decode()}")

    def compile(self, source: str, name: str, opts: list[str]) -> str:
        prog = ctypes.c_void_p()
        self._check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(),
                                                0, None, None), "nvrtcCreateProgram")
        try:
            copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
            rc = self.lib.nvrtcCompileProgram(prog, len(opts), copts)
            size = ctypes.c_size_t()
            self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            self.lib.nvrtcGetProgramLog(prog, log)
            if rc != 0:
                raise RuntimeError(f"NVRTC failed for {name}:\n{log.value.decode(errors='replace')}")
            self.lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
            return buf.value.decode()
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def relativize(path: Path) -> None:
    """Make the `.file` paths (from -lineinfo) repository-relative so the output is machine-independent."""
    text = path.read_text()
    path.write_text(text.replace(f'"{ROOT}/', '"').replace(f'"{Path.cwd()}/', '"'))


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd))
    subprocess.run(cmd, check=True)


def gen_nvcc(nvcc: str) -> list[tuple[Path, str]]:
    out = []
    for cu in sorted(CORPUS.glob("*.cu")):
        dst = PTX / f"{cu.stem}.ptx"
        run([nvcc, "-ptx", "-arch=sm_80", *NVCC_FLAGS, str(cu), "-o", str(dst)])
        relativize(dst)
        out.append((dst, "sm_80"))
    for stem, arch, name in NVCC_EXTRA:
        dst = PTX / f"{name}.ptx"
        run([nvcc, "-ptx", f"-arch={arch}", *NVCC_FLAGS, str(CORPUS / f"{stem}.cu"), "-o", str(dst)])
        relativize(dst)
        out.append((dst, arch))
    return out


def gen_nvrtc() -> list[tuple[Path, str]]:
    out = []
    compilers: dict[int, Nvrtc] = {}
    for stem, arch, name, major in NVRTC_JOBS:
        if major not in compilers:
            compilers[major] = Nvrtc(find_nvrtc(major))
            print(f"NVRTC {compilers[major].version} for major {major}")
        src = (CORPUS / f"{stem}.cu").read_text()
        ptx = compilers[major].compile(src, f"corpus/{stem}.cu", [f"--gpu-architecture={arch}", "-lineinfo"])
        dst = PTX_NVRTC / f"{name}.ptx"
        dst.write_text(ptx)
        relativize(dst)
        print(f"nvrtc{major} {arch}: {dst.relative_to(ROOT)}")
        out.append((dst, "sm_" + arch.split("_")[1]))
    return out


def ptxas_version(ptxas: str) -> str:
    """PTX ISA version ptxas supports (read from its error on an impossible version)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(".version 99.9\n.target sm_80\n.address_size 64\n")
    try:
        r = subprocess.run([ptxas, "-arch=sm_80", f.name, "-o", os.devnull], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    m = re.search(r"current version is '([0-9.]+)'", r.stderr)
    return m.group(1) if m else "9.0"


def check(files: list[tuple[Path, str]], ptxas: str) -> None:
    supported = ptxas_version(ptxas)
    sv = tuple(int(x) for x in supported.split("."))
    for path, arch in files:
        text = path.read_text()
        ver = re.search(r"^\.version\s+([0-9.]+)", text, re.M).group(1)
        # sm_5x PTX is checked by ptxas for sm_75 (forward compatible JIT target).
        check_arch = arch if int(arch.split("_")[1]) >= 75 else "sm_75"
        target = path
        tmp = None
        if tuple(int(x) for x in ver.split(".")) > sv:
            tmp = tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False)
            tmp.write(re.sub(r"^\.version\s+[0-9.]+", f".version {supported}", text, count=1, flags=re.M))
            tmp.close()
            target = Path(tmp.name)
            print(f"note: {path.name} is PTX {ver}; checking with .version {supported}")
        try:
            run([ptxas, f"-arch={check_arch}", str(target), "-o", os.devnull])
        finally:
            if tmp:
                os.unlink(tmp.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-nvcc", action="store_true")
    ap.add_argument("--no-nvrtc", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas") or "/usr/local/bin/ptxas"
    PTX.mkdir(parents=True, exist_ok=True)
    PTX_NVRTC.mkdir(parents=True, exist_ok=True)
    files: list[tuple[Path, str]] = []
    if not args.no_nvcc:
        files += gen_nvcc(nvcc)
    if not args.no_nvrtc:
        files += gen_nvrtc()
    if not args.no_check:
        check(files, ptxas)
    print(f"{len(files)} PTX files generated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
