"""CLI: python -m tools.fuzz [-n N] [--seed S] [-j JOBS] [--out DIR] [--no-ptxas] [--minimize K] [--opt-every N]."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tools.fuzz.mutate import load_corpus, make_mutant
from tools.fuzz.runner import NON_CLEAN, Limits, minimize, run_many, summarize


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    ap.add_argument("-n", "--count", type=int, default=500, help="number of mutants (default 500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first mutant index (to resume or shard a run)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel children (default 2)")
    ap.add_argument("--out", default="fuzz-results", help="results directory (default fuzz-results)")
    ap.add_argument("--timeout", type=float, default=30.0, help="wall-clock seconds per case")
    ap.add_argument("--mem", type=float, default=8.0, help="address-space limit per case, GiB")
    ap.add_argument("--no-ptxas", action="store_true", help="do not compare with ptxas")
    ap.add_argument("--minimize", type=int, default=1,
                    help="minimize this many reproducers per distinct failure signature (default 1)")
    ap.add_argument("--opt-every", type=int, default=10, metavar="N",
                    help="build every mutant at the baseline (tier 0's level) and every N-th also at the "
                         "optimizing level (default 10; 1: every mutant at both, 0: baseline only)")
    ap.add_argument("--budget", type=float, default=0, help="stop starting new mutants after this many seconds")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)

    ptxas = None if a.no_ptxas else shutil.which("ptxas")
    limits = Limits(a.timeout, int(a.mem * (1 << 30)), ptxas, a.opt_every)
    os.environ.setdefault("PTXJIT_CACHE_DIR", tempfile.mkdtemp(prefix="ptxjit-fuzz-cache-"))
    os.environ.setdefault("PTXJIT_WORKERS", "1")  # one thread per child: -j already uses the cores
    import ptxjit  # noqa: F401 - imported once in the parent, inherited by every forked child
    from ptxjit.jit.engine import host_description

    host_description()  # LLVM's native target initialized (and the host CPU asked) once, not per child

    out = Path(a.out)
    (out / "cases").mkdir(parents=True, exist_ok=True)
    pools = load_corpus()
    texts: dict[int, tuple[str, str, str]] = {}
    t0 = time.monotonic()

    def cases():
        for i in range(a.start, a.start + a.count):
            if a.budget and time.monotonic() - t0 > a.budget:
                return
            texts[i] = make_mutant(a.seed, i, pools)
            yield i, texts[i][2]

    log = open(out / "results.jsonl", "w")
    done = 0

    def on_result(i: int, res) -> None:
        nonlocal done
        done += 1
        src, desc, text = texts.pop(i) if res.outcome not in NON_CLEAN else texts[i]
        rec = {"index": i, "seed": a.seed, "source": src, "mutation": desc, **res.__dict__}
        rec.pop("events")
        log.write(json.dumps(rec) + "\n")
        if res.outcome in NON_CLEAN:
            (out / "cases" / f"{i:06d}.ptx").write_text(text)
            if not a.quiet:
                print(f"[{i}] {res.outcome} {res.type} {res.phase} {res.where} {res.msg[:100]!r} ({desc})",
                      flush=True)
        if not a.quiet and done % 100 == 0:
            print(f"... {done} done, {time.monotonic() - t0:.0f} s", flush=True)

    results = run_many(cases(), limits, a.jobs, on_result)
    log.close()
    elapsed = time.monotonic() - t0

    # one minimized reproducer per distinct failure signature (more with --minimize K)
    by_sig: dict[str, list[int]] = {}
    for i, r in sorted(results.items()):
        if r.outcome in NON_CLEAN:
            by_sig.setdefault(r.signature, []).append(i)
    repro = out / "reproducers"
    if by_sig:
        repro.mkdir(exist_ok=True)
    index = []
    for n, (sig, idxs) in enumerate(sorted(by_sig.items())):
        for i in idxs[:a.minimize]:
            small = minimize(texts[i][2], sig, limits)
            name = f"r{n:03d}_{i:06d}.ptx"
            (repro / name).write_text(small)
            index.append({"file": name, "signature": sig, "count": len(idxs), "index": i,
                          "msg": results[i].msg, "lines": small.count("\n") + 1})
    if index:
        (repro / "index.json").write_text(json.dumps(index, indent=1))
    table = summarize(results, elapsed, ptxas is not None)
    (out / "summary.txt").write_text(table + "\n")
    print(f"seed {a.seed}, mutants {a.start}..{a.start + len(results) - 1}, ptxas: {ptxas or 'not found'}")
    print(table)
    if index:
        print(f"reproducers ({len(index)}) in {repro}:")
        for e in index:
            print(f"  {e['file']}  x{e['count']}  {e['signature']}  {e['msg'][:80]!r}")
    return 1 if by_sig else 0


if __name__ == "__main__":
    sys.exit(main())
