"""The rule table.  Importing this package registers every instruction family."""

from ptxjit.lower.rules import (  # noqa: F401  (imported for their registrations)
    atomic,
    compare,
    control,
    convert,
    floating,
    integer,
    memory,
    sync,
)
from ptxjit.lower.rules.registry import RULES, Rule, check_instruction

__all__ = ["RULES", "Rule", "check_instruction"]
