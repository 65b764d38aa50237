"""The rules, one module per instruction family.  Importing this package registers every one of them in
the rule table (lower/registry.py): what imports it has the complete table."""

from ptxjit.lower.registry import RULES, Rule, check_instruction, diagnose
from ptxjit.lower.rules import (  # noqa: F401  (imported for their registrations)
    async_copy,
    async_store,
    atomic,
    b128,
    bits,
    cluster,
    compare,
    control,
    convert,
    floating,
    grid_sync,
    half,
    integer,
    istypep,
    matrix,
    mbarrier,
    memory,
    mma,
    mma_sparse,
    multimem,
    simd16,
    stack,
    sync,
    tensormap,
    texture,
    video,
    wgmma,
    wgmma_sparse,
    wmma,
)

__all__ = ["RULES", "Rule", "check_instruction", "diagnose"]
