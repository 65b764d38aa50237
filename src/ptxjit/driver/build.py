"""Build ptxjit's libcuda.so.1: the driver API's C ABI over driver/capi.py, with cffi's embedding mode.

The library starts Python when a plain C/C++ program loads it (the interpreter this build ran under, with
its packages), and joins the running interpreter when a Python process loads it (cuda-python, numba-cuda,
ctypes).  Besides the entry points capi.py implements it exports every other name of CUDA 13's driver API
as a function returning CUDA_ERROR_NOT_SUPPORTED (named once in the driver log), and the bare legacy names
whose signature equals their versioned successor's; cuGetProcAddress is C (a table lookup, no Python).

`python -m ptxjit.driver.build` (run by the install, scripts/setup_venv.sh) writes it to `libdir()`.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from ptxjit import config
from ptxjit.driver import errors as E
from ptxjit.driver.abi_tables import ALIASES, ENTRY_POINTS

HERE = Path(__file__).resolve().parent
HEADER = HERE / "c_api.h"
MODULE = "_ptxjit_libcuda"
# legacy (unversioned) names whose C signature is their successor's: the same implementation serves both
SAME_SIGNATURE = {
    "cuCtxDestroy": "cuCtxDestroy_v2", "cuCtxPopCurrent": "cuCtxPopCurrent_v2",
    "cuCtxPushCurrent": "cuCtxPushCurrent_v2", "cuStreamDestroy": "cuStreamDestroy_v2",
    "cuEventDestroy": "cuEventDestroy_v2", "cuEventElapsedTime": "cuEventElapsedTime_v2",
    "cuDevicePrimaryCtxRelease": "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset": "cuDevicePrimaryCtxReset_v2",
    "cuDevicePrimaryCtxSetFlags": "cuDevicePrimaryCtxSetFlags_v2", "cuLinkCreate": "cuLinkCreate_v2",
    "cuLinkAddData": "cuLinkAddData_v2", "cuLinkAddFile": "cuLinkAddFile_v2",
    "cuMemHostRegister": "cuMemHostRegister_v2",
}


def implemented() -> list[str]:
    """The entry points c_api.h declares (those capi.py implements)."""
    import re

    return re.findall(r"CUresult\s+(cu\w+)\s*\(", HEADER.read_text())


def libdir() -> Path:
    """Where the library lives: PTXJIT_DRIVER_LIBDIR, else next to the package (a writable install), else
    the user's cache."""
    env = config.DRIVER_LIBDIR.text()
    if env:
        return Path(env)
    local = HERE / "lib"
    if os.access(HERE, os.W_OK):
        return local
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ptxjit" / "driver"


def _site_dirs() -> list[str]:
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d)]


def _c_source(impl: list[str]) -> str:
    impl_set = set(impl)
    per_thread = {n for n in ENTRY_POINTS if n.endswith(("_ptds", "_ptsz"))}
    lines = ['#include <string.h>', '#include <stdint.h>', '#include <stdlib.h>', HEADER.read_text(),
             "CUresult ptxjit_unsupported(const char *name);", "void ptxjit_register_atexit(void);",
             "int ptxjit_started_interpreter(void);"]
    exported: dict[str, str] = {n: n for n in impl}
    for legacy, successor in SAME_SIGNATURE.items():
        if successor in impl_set:
            exported[legacy] = successor
    # per-thread default stream variants: the same implementation (one device; the legacy stream serves both)
    for n in sorted(per_thread):
        base = n[:-5]
        if base in impl_set:
            exported[n] = base
    in_c = ("cuGetProcAddress", "cuGetProcAddress_v2", "cuGetExportTable", "cuGetErrorName", "cuGetErrorString")
    stubs = [n for n in ENTRY_POINTS if n not in exported and n not in in_c]
    for n, target in sorted(exported.items()):
        if n != target:  # the same function under a second name
            lines.append(f"CUresult {n}() __attribute__((alias(\"{target}\"), visibility(\"default\")));")
    for n in stubs:
        lines.append(f"__attribute__((visibility(\"default\"))) CUresult {n}(void) "
                     f"{{ return ptxjit_unsupported(\"{n}\"); }}")
    table = sorted({*exported, *stubs, *in_c})
    lines.append("CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,"
                 " int *symbolStatus);")
    lines.append("CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);")
    lines.append("CUresult cuGetExportTable(const void **ppExportTable, const void *pExportTableId);")
    lines.append("CUresult cuGetErrorName(CUresult error, const char **pStr);")
    lines.append("CUresult cuGetErrorString(CUresult error, const char **pStr);")
    lines.append("typedef struct { const char *name; void *fn; } ptxjit_entry;")
    lines.append("static const ptxjit_entry ptxjit_entries[] = {")
    lines += [f'    {{"{n}", (void *){n}}},' for n in table]
    lines.append("    {0, 0}};")
    lines.append("typedef struct { const char *name; const char *target; } ptxjit_alias;")
    lines.append("static const ptxjit_alias ptxjit_aliases[] = {")
    lines += [f'    {{"{a}", "{b}"}},' for a, b in sorted(ALIASES.items()) if b in table or b + "_ptds" in table]
    lines.append("    {0, 0}};")
    lines.append(_PROC_ADDRESS)
    lines.append(error_table_c("ptxjit_driver_error", [(c, n, E.error_string(c) or n) for c, n in E.NAMES.items()]))
    lines.append(_ERROR_TEXT)
    return "\n".join(lines)


# The C side every embedded ptxjit library (libcuda.so.1, the runtime's libcudart.so.13) starts with: exit
# handling for a C program that started the interpreter, and the guard on calls after finalization.
C_PROLOGUE = r"""
/* A C program that exits while ptxjit's threads run (streams, tier-1 builds) must first let Python's exit
   handlers stop them: LLVM's static destructors would otherwise run under a compiling thread.  Registered
   once ptxjit is imported (after LLVM's destructors, so it runs before them), and only when this library
   started the interpreter; in a Python process the interpreter's own exit does it. */
void ptxjit_shutdown(void);
static int ptxjit_started_python = 0;
/* A C program may load this library with dlopen (RTLD_LOCAL, as the CUDA runtime linked statically into a
   program loads libcuda.so.1): libpython then is not in the global scope, and the extension modules Python
   imports (cffi's backend, numpy) could not resolve its symbols.  When this library starts the interpreter,
   libpython is made global first. */
#include <dlfcn.h>
#include <stdio.h>
static void ptxjit_promote_libpython(void) {
    Dl_info info;
    if (dladdr((void *)Py_IsInitialized, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
}
__attribute__((constructor)) static void ptxjit_ctor(void) {
    ptxjit_started_python = !Py_IsInitialized();
    if (ptxjit_started_python) ptxjit_promote_libpython();
}
static void ptxjit_exit_handler(void) { ptxjit_shutdown(); }
int ptxjit_started_interpreter(void) { return ptxjit_started_python; }
static int ptxjit_python_up = 0;  /* ptxjit's Python side has run (install() calls ptxjit_register_atexit) */
void ptxjit_register_atexit(void) {
    static int done = 0;
    ptxjit_python_up = 1;
    if (ptxjit_started_python && !done) { done = 1; atexit(ptxjit_exit_handler); }
}

/* A call that arrives once the interpreter is finalized (a C++ thread-local destructor run by exit(), as
   cuda.core's context handles do with cuDevicePrimaryCtxRelease) cannot enter Python: it returns
   CUDA_ERROR_DEINITIALIZED, as a driver that is shutting down does.  Every entry point cffi generates below
   calls Python through this guard (each returns a CUresult, written where cffi reads its result).
   The same holds once finalization has begun: Python can no longer run ptxjit's code.  What arrives then is
   mostly an extension module's objects releasing their handles as the interpreter tears its modules down
   (CuPy's modules, memory pools, streams): a release succeeds, since the process's memory goes back to the
   system as it exits, and a program that checks its result sees what a driver that is still up answers. */
#if PY_VERSION_HEX >= 0x030D0000
#define ptxjit_python_finalizing() Py_IsFinalizing()
#else
PyAPI_FUNC(int) _Py_IsFinalizing(void);
#define ptxjit_python_finalizing() _Py_IsFinalizing()
#endif
static int ptxjit_is_release(const char *name) {
    static const char *const verbs[] = {"Free", "Destroy", "Unload", "Release", "Unregister", "Unmap", 0};
    for (const char *const *v = verbs; name && *v; v++)
        if (strstr(name, *v)) return 1;
    return 0;
}
/* When ptxjit's Python side cannot start (an import fails: a broken install, a bad PTXJIT_* value), cffi
   prints the traceback and answers every call with zeros: CUDA_SUCCESS, with nothing written to the outputs
   the program then reads.  Such a call returns CUDA_ERROR_NOT_INITIALIZED (cudaErrorInitializationError: 3)
   instead, and a pointer result is NULL. */
static void ptxjit_guarded_call_python(struct _cffi_externpy_s *externpy, char *args) {
    if (ptxjit_python_up && (!Py_IsInitialized() || ptxjit_python_finalizing())) {
        /* nothing is written to the caller's outputs; a pointer result is NULL */
        if (externpy->size_of_result) memset(args, 0, externpy->size_of_result);
        if (externpy->size_of_result == sizeof(int) && !ptxjit_is_release(externpy->name)) *(int *)args = 4;
        return;
    }
    _cffi_call_python(externpy, args);
    if (!ptxjit_python_up) {
        static int told = 0;
        if (!told) {
            told = 1;
            fprintf(stderr, "ptxjit: the CUDA library could not start ptxjit (the error is above); every call "
                            "returns an initialization error\n");
        }
        if (externpy->size_of_result) memset(args, 0, externpy->size_of_result);
        if (externpy->size_of_result == sizeof(int)) *(int *)args = 3;
    }
}
#define _cffi_call_python ptxjit_guarded_call_python
"""

def error_table_c(prefix: str, entries: list[tuple[int, str, str]]) -> str:
    """A C table of error codes with their names and descriptions, and `<prefix>_lookup(code)`: the error
    functions answer in C, so they work while Python cannot run (during and after its finalization)."""

    rows = [f"    {{{code}, {json.dumps(name)}, {json.dumps(text)}}}," for code, name, text in sorted(entries)]
    return "\n".join([
        "typedef struct { int code; const char *name, *text; } ptxjit_error_row;",
        f"static const ptxjit_error_row {prefix}_rows[] = {{", *rows, "    {0, 0, 0}};",
        f"static const ptxjit_error_row *{prefix}_lookup(int code) {{",
        f"    for (const ptxjit_error_row *r = {prefix}_rows; r->name; r++)",
        "        if (r->code == code) return r;",
        "    return 0;",
        "}"])


# cuGetErrorName/String: in C over the generated table (an unknown code is CUDA_ERROR_INVALID_VALUE, *pStr NULL)
_ERROR_TEXT = r"""
CUresult cuGetErrorName(CUresult error, const char **pStr) {
    if (!pStr) return 1;
    const ptxjit_error_row *r = ptxjit_driver_error_lookup(error);
    *pStr = r ? r->name : 0;
    return r ? 0 : 1;
}
CUresult cuGetErrorString(CUresult error, const char **pStr) {
    if (!pStr) return 1;
    const ptxjit_error_row *r = ptxjit_driver_error_lookup(error);
    *pStr = r ? r->text : 0;
    return r ? 0 : 1;
}
"""

_PROC_ADDRESS = C_PROLOGUE + r"""
static void *ptxjit_lookup(const char *name) {
    for (const ptxjit_entry *e = ptxjit_entries; e->name; e++)
        if (strcmp(e->name, name) == 0) return e->fn;
    return 0;
}

/* cuGetProcAddress: the newest version of `symbol` this ABI has (cuMemAlloc -> cuMemAlloc_v2), its per-thread
   default stream variant when asked for (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM). */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus) {
    if (symbolStatus) *symbolStatus = 1;  /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    if (!symbol || !pfn) return 1;        /* CUDA_ERROR_INVALID_VALUE */
    *pfn = 0;
    const char *target = symbol;
    for (const ptxjit_alias *a = ptxjit_aliases; a->name; a++)
        if (strcmp(a->name, symbol) == 0) { target = a->target; break; }
    void *fn = 0;
    if (flags & 2) {
        char buf[160];
        size_t n = strlen(target);
        if (n < sizeof buf - 6) {
            memcpy(buf, target, n);
            memcpy(buf + n, "_ptds", 6);
            fn = ptxjit_lookup(buf);
            if (!fn) { memcpy(buf + n, "_ptsz", 6); fn = ptxjit_lookup(buf); }
        }
    }
    if (!fn) fn = ptxjit_lookup(target);
    if (!fn) fn = ptxjit_lookup(symbol);
    if (!fn) return 500;                  /* CUDA_ERROR_NOT_FOUND */
    *pfn = fn;
    if (symbolStatus) *symbolStatus = 0;  /* CU_GET_PROC_ADDRESS_SUCCESS */
    (void)cudaVersion;
    return 0;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, 0);
}

/* the CUDA runtime's private tables: not provided.  NVRTC asks for one too, as a probe it does without: only
   another caller (a statically linked runtime) is reported. */
CUresult cuGetExportTable(const void **ppExportTable, const void *pExportTableId) {
    if (ppExportTable) *ppExportTable = 0;
    (void)pExportTableId;
    Dl_info caller;
    if (dladdr(__builtin_return_address(0), &caller) && caller.dli_fname) {
        const char *base = strrchr(caller.dli_fname, '/');
        if (strncmp(base ? base + 1 : caller.dli_fname, "libnvrtc", 8) == 0) return 801;  /* NOT_SUPPORTED */
    }
    return ptxjit_unsupported("cuGetExportTable");
}
"""

_INIT = """
import os, sys
def _ptxjit_paths():
    extra = os.environ.get(%(pythonpath_var)r, "")
    return [p for p in extra.split(os.pathsep) if p] + %(paths)r
try:
    import %(capi)s as _capi
except ImportError:
    import site
    for _p in _ptxjit_paths():
        site.addsitedir(_p)
    import %(capi)s as _capi
from %(module)s import ffi, lib
if lib.ptxjit_started_interpreter():
    # the interpreter runs inside a C program: its executable is the program, not Python (ptxjit starts
    # Python children for background builds), and it has no argv
    sys.executable = %(python)r
    if not getattr(sys, "argv", None):
        sys.argv = [""]
_capi.install(ffi, lib)
"""


def init_code(capi: str, module: str) -> str:
    """The Python an embedded ptxjit library runs when loaded: find ptxjit (the build's site folders, a source
    checkout, PTXJIT_DRIVER_PYTHONPATH), fix sys.executable/argv in a C program, install `capi`'s entry points."""
    src_root = str(HERE.parent.parent)  # a source checkout without an install
    return _INIT % {"paths": [*_site_dirs(), src_root], "module": module, "python": sys.executable, "capi": capi,
                    "pythonpath_var": config.DRIVER_PYTHONPATH.name}


def fingerprint() -> str:
    """What the built library depends on: the header, this file, the ABI tables and the interpreter."""
    h = hashlib.sha256()
    for p in (HEADER, Path(__file__), HERE / "abi_tables.py", HERE / "errors.py"):
        h.update(p.read_bytes())
    h.update(sys.version.encode() + sys.prefix.encode())
    return h.hexdigest()[:16]


def library_path() -> Path:
    return libdir() / "libcuda.so.1"


def is_current() -> bool:
    stamp = libdir() / "libcuda.stamp"
    return library_path().is_file() and stamp.is_file() and stamp.read_text().strip() == fingerprint()


def build(verbose: bool = False) -> Path:
    """Compile libcuda.so.1 (and the libcuda.so link) into libdir(); returns the library's path."""
    import cffi

    impl = implemented()
    ffi = cffi.FFI()
    ffi.embedding_api(HEADER.read_text() + "\nCUresult ptxjit_unsupported(const char *name);\n"
                      "void ptxjit_shutdown(void);\n")
    ffi.cdef("void ptxjit_register_atexit(void); int ptxjit_started_interpreter(void);")
    libpython = sysconfig.get_config_var("LIBDIR") or ""
    link_args = ["-Wl,-soname,libcuda.so.1"] + ([f"-Wl,-rpath,{libpython}"] if libpython else [])
    ffi.set_source(MODULE, _c_source(impl), extra_link_args=link_args, extra_compile_args=["-Wno-attribute-alias"])
    ffi.embedding_init_code(init_code("ptxjit.driver.capi", MODULE))
    out = libdir()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ptxjit-libcuda-") as tmp:
        target = ffi.compile(tmpdir=tmp, target="libcuda.so.1", verbose=verbose)
        return install_library(Path(target), out, "libcuda.so.1", "libcuda", fingerprint())


def install_library(built: Path, out: Path, soname: str, stem: str, stamp: str) -> Path:
    """Move a freshly built `built` into `out` as `soname` (atomically: a process loading the old one meanwhile
    keeps it), add the `stem`.so link and write the fingerprint stamp the next ensure_built() compares."""
    final = out / soname
    tmp_final = out / f".{soname}.{os.getpid()}"
    built.replace(tmp_final)
    tmp_final.replace(final)
    link = out / f"{stem}.so"
    if not link.exists():
        link.symlink_to(soname)
    (out / f"{stem}.stamp").write_text(stamp + "\n")
    return final


def ensure_built() -> Path:
    """The library, built first if missing or out of date."""
    if not is_current():
        build()
    return library_path()


if __name__ == "__main__":
    print(build(verbose="-v" in sys.argv))
