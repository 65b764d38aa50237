"""Assemble a PTX file with ptxas (sm_90) and count, per kernel, the float multiply/add/fma SASS ops."""

import json
import os
import re
import subprocess
import sys
import tempfile

OPS = {"FFMA": "fma", "DFMA": "fma", "HFMA2": "fma", "FMUL": "mul", "DMUL": "mul", "HMUL2": "mul",
       "FADD": "add", "DADD": "add", "HADD2": "add"}


def main() -> None:
    nvdisasm = os.environ.get("NVDISASM", "nvdisasm")
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "p.cubin")
        subprocess.run(["ptxas", "-arch=sm_90", sys.argv[1], "-o", cubin], check=True)
        sass = subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True, text=True).stdout
    counts: dict[str, dict[str, int]] = {}
    kernel = None
    for line in sass.splitlines():
        m = re.match(r"\s*\.text\.(\w+):", line)
        if m:
            kernel = m.group(1)
            counts[kernel] = {"fma": 0, "mul": 0, "add": 0}
            continue
        m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9]+)(?:\.[A-Z0-9_.]+)?\s", line)
        # HFMA2.MMA Rx, -RZ, RZ, imm is how ptxas materializes a constant, not arithmetic
        if kernel and m and m.group(1) in OPS and "-RZ, RZ," not in line:
            counts[kernel][OPS[m.group(1)]] += 1
    json.dump(dict(sorted(counts.items())), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
