"""Mutational fuzzing of ptxjit's load and launch path (a developer tool, not part of the package).

`python -m tools.fuzz -n 1000 --seed 1 -j 2 --out fuzz-results` mutates the corpus PTX, runs each
mutant in a forked child under memory and time limits, classifies the outcome (clean error, internal
error, signal, hang, ok), compares accept/reject with ptxas when it is installed, minimizes a
reproducer per distinct failure and prints a summary table (scripts/fuzz.sh: the 10,000-mutant run).
"""
