"""The rule table.  Importing this package registers every instruction family."""

from ptxjit.lower.rules import (  # noqa: F401  (imported for their registrations)
    async_copy,
    atomic,
    b128,
    bits,
    cluster,
    compare,
    control,
    convert,
    floating,
    grid_sync,
    integer,
    istypep,
    matrix,
    memory,
    mma,
    multimem,
    simd16,
    stack,
    sync,
    tensormap,
    texture,
    video,
    wgmma,
    wmma,
)
from ptxjit.lower.rules.registry import RULES, Rule, check_instruction

__all__ = ["RULES", "Rule", "check_instruction"]
