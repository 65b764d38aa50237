"""Attach the CUDA source line (from `.loc`) to every instruction's position, once the whole module is
parsed (nvcc writes the `.file` table at the end of the PTX), so that validation errors, traps and faults
name the user's line first: `kernel.cu:12:5 (PTX kernel.ptx:88:2)`."""

from __future__ import annotations

import dataclasses

from ptxjit.frontend import ir


def attach_source_lines(module: ir.Module) -> None:
    if not module.files:
        return
    for fn in module.functions.values():
        for ins in fn.instructions:
            if ins.src_loc is None:
                continue
            index, line, col = ins.src_loc
            file = module.files.get(index)
            if not file or line <= 0:
                continue
            where = f"{file}:{line}:{col}" if col > 0 else f"{file}:{line}"
            ins.pos = dataclasses.replace(ins.pos, source=where)
