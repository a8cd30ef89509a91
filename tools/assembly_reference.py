#!/usr/bin/env python3
"""Runs the reference assembly simulator (dmitropolsky/assemblies) beside
gaia's ports of its learner and recursive parser, and prints both.

The reference is found through the environment variable GAIA_ASSEMBLIES_REF
(a checkout of that repository, holding brain.py, learner.py and
recursive_parser.py); without it the script says so and exits 0. gaia's
examples are found in --bin (default build/examples).

  assembly_reference.py learner [--sizes A-B] [--seeds A-B] [--max N] [--bin DIR]
      the reference's lexicon_sizes_experiment (LearnBrain(p = 0.05,
      LEX_k = 50, LEX_n = 10^5, beta = 0.06), train_experiment_randomized)
      and assembly_learner --lexicon-sizes with the same sizes and seeds:
      the sentences each needed, per size mean and spread.
  assembly_reference.py recursive [--seeds A-B] [--bin DIR] ["SENTENCE" ...]
      the reference's recursive_parser.parse and assembly_recursive_parser
      on the same sentences, the dependencies compared one by one.

The reference's random streams are seeded here (random, numpy's global
state, the brain's generator, and PYTHONHASHSEED = 0 for the order of its
read-out) so that its runs repeat; its seeds and
gaia's are different streams, so only the statistics compare."""
import os
import random
import re
import statistics
import subprocess
import sys
import types

SENTENCES = [
    "dogs that chase cats , run",
    "the dogs that chase mice , bite people",
    "cats that people love , run quickly",
    "the big dogs that bite cats , run",
    "people that love dogs , chase cats",
]


def seed_range(text):
    a, b = text.split("-") if "-" in text else (text, text)
    return range(int(a), int(b) + 1)


def reference_path():
    path = os.environ.get("GAIA_ASSEMBLIES_REF")
    if not path:
        print("GAIA_ASSEMBLIES_REF is not set (a checkout of dmitropolsky/assemblies): skipped")
        sys.exit(0)
    sys.path.insert(0, path)
    # pptree only draws trees; the parse does not need it
    sys.modules.setdefault("pptree", types.ModuleType("pptree"))
    return path


def seed_reference(seed):
    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    return np.random.default_rng(seed)


def reference_learner(n, seed, max_samples):
    import learner
    rng = seed_reference(seed)
    b = learner.LearnBrain(0.05, LEX_k=50, LEX_n=100000, num_nouns=n, num_verbs=n, beta=0.06)
    b._rng = rng
    b.no_print = True
    devnull = open(os.devnull, "w")
    old, sys.stdout = sys.stdout, devnull
    try:
        return b.train_experiment_randomized(max_samples=max_samples)
    finally:
        sys.stdout = old
        devnull.close()


def gaia_learner(bindir, n, seeds, max_samples):
    cmd = [os.path.join(bindir, "assembly_learner"), "--lexicon-sizes", "%d-%d" % (n, n),
           "--seeds", "%d-%d" % (seeds[0], seeds[-1]), "--max", str(max_samples)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = []
    for line in out.splitlines():
        m = re.match(r"size (\d+) seed (\d+): (\S+) sentences", line)
        if m:
            got.append(None if m.group(3) == "none" else int(m.group(3)))
    return got


def spread(values):
    ok = [v for v in values if v is not None]
    if not ok:
        return "no run learned the lexicon"
    sd = statistics.stdev(ok) if len(ok) > 1 else 0.0
    return "mean %.1f, sd %.1f, range %d-%d (%d of %d learned)" % (
        statistics.mean(ok), sd, min(ok), max(ok), len(ok), len(values))


def cmd_learner(args, bindir):
    sizes, seeds, max_samples = range(2, 4), range(1, 6), 500
    while args:
        a = args.pop(0)
        if a == "--sizes":
            sizes = seed_range(args.pop(0))
        elif a == "--seeds":
            seeds = seed_range(args.pop(0))
        elif a == "--max":
            max_samples = int(args.pop(0))
        else:
            sys.exit("unknown argument " + a)
    seeds = list(seeds)
    for n in sizes:
        ref = [reference_learner(n, s, max_samples) for s in seeds]
        ours = gaia_learner(bindir, n, seeds, max_samples)
        print("lexicon of %d nouns and %d verbs, seeds %d-%d" % (n, n, seeds[0], seeds[-1]))
        print("  reference: %s  [%s]" % (spread(ref), " ".join(str(v) for v in ref)))
        print("  gaia:      %s  [%s]" % (spread(ours), " ".join(str(v) for v in ours)))
        sys.stdout.flush()


def reference_parse(sentence, seed):
    import recursive_parser
    import io
    import contextlib
    rng = seed_reference(seed)
    b = recursive_parser.EnglishParserBrain(0.1, LEX_k=20, verbose=False)
    b._rng = rng
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        recursive_parser.parseHelper(b, sentence, 0.1, 20, 30, False, False, recursive_parser.LEXEME_DICT,
                                     recursive_parser.AREAS, recursive_parser.EXPLICIT_AREAS,
                                     recursive_parser.ReadoutMethod.FIBER_READOUT,
                                     recursive_parser.ENGLISH_READOUT_RULES)
    lines = buf.getvalue().splitlines()
    deps = eval(lines[lines.index("Got dependencies: ") + 1])  # a list of [head, dependent, label]
    return sorted("%s -%s-> %s" % (h, "DEP-VERB" if l == "DEP-VERB" else l, d) for h, d, l in deps)


def gaia_parse(bindir, sentence, seed):
    cmd = [os.path.join(bindir, "assembly_recursive_parser"), "--seed", str(seed), sentence]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return sorted(l.strip() for l in out.splitlines() if " -" in l and "-> " in l and not l.strip().startswith("tree"))


def cmd_recursive(args, bindir):
    seeds, sentences = range(1, 4), []
    while args:
        a = args.pop(0)
        if a == "--seeds":
            seeds = seed_range(args.pop(0))
        else:
            sentences.append(a)
    sentences = sentences or SENTENCES
    same = total = 0
    for sentence in sentences:
        print(sentence)
        for s in seeds:
            ref = reference_parse(sentence, s)
            ours = gaia_parse(bindir, sentence, s)
            total += 1
            same += ref == ours
            print("  seed %d: %s" % (s, "same dependencies" if ref == ours else "DIFFERENT"))
            for r in sorted(set(ref) | set(ours)):
                print("    %-9s %-9s %s" % ("ref" if r in ref else "", "gaia" if r in ours else "", r))
        sys.stdout.flush()
    print("%d of %d parses with the same dependencies" % (same, total))


def main():
    # the reference's read-out walks Python sets of area names, whose order
    # follows string hashing: fixed here so that its runs repeat
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    argv = sys.argv[1:]
    bindir = "build/examples"
    if "--bin" in argv:
        i = argv.index("--bin")
        bindir = argv[i + 1]
        del argv[i:i + 2]
    if not argv or argv[0] not in ("learner", "recursive"):
        sys.exit(__doc__)
    reference_path()
    (cmd_learner if argv[0] == "learner" else cmd_recursive)(argv[1:], bindir)


if __name__ == "__main__":
    main()
