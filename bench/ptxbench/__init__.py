"""The benchmark harness's package: bench/run.py runs the sections; each section module also runs alone."""

import json


def run_alone(measure, markdown) -> int:
    """A section module's `main`: measure, print the results as JSON, then the section's markdown."""
    sec = measure()
    print(json.dumps(sec))
    print("\n".join(markdown(sec)))
    return 0
