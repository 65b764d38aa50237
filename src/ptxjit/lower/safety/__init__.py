"""Memory safety of generated code: the bounds checks of loads, stores and atomics (bounds.py), the
precheck that clears a fast copy's accesses once per CTA (corners.py), counted loops checked on entry
(loops.py) and what value ranges decide for them (ranges.py).  FnLowering (lower/function.py) holds one
BoundsChecks per function; the memory rules ask it for every access."""
