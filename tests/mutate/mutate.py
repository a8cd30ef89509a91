#!/usr/bin/env python3
"""Mutation testing of gaia's library code.

Plants one small bug (a mutant) at a time in a copy of gaia.h / gaia_cpu.h,
rebuilds only the library object, links it with the test runner's existing
objects (compiled with -DGAIA_NO_IMPLEMENTATION, so they do not depend on the
code under test), and runs the tests that cover the mutated function. A
mutant is killed when a test fails, the runner crashes or it runs past the
time limit; it survives when every selected test passes. At the end: the
score and every surviving mutant, with the ones listed as equivalent in
tests/mutate/equivalent.txt (and their reasons) apart.

Usually run through `make mutate` (see `make help`), which passes the
compiler, flags and objects of the build. By hand:

  tests/mutate/mutate.py --list [--files F] [--functions RE]   the candidates
  tests/mutate/mutate.py --show ID                             one mutant's diff
  tests/mutate/mutate.py ... --sample 100 --seed 1            a sampled run
  tests/mutate/mutate.py ... --only ID[,ID]                    chosen mutants

Mutants: relational (< <= > >= == !=), logical (&& ||), arithmetic (+ -,
* /), compound assignment (+= -=, *= /=), ++/--, integer and float
literals (n -> n+1, n -> 0; x.y -> 0.0 or 2 x.y, 0.0 -> 1.0), and deleting an assignment or call
statement. Comments, strings and preprocessor directives are left alone;
only code inside function bodies (and function-like macro bodies) is
mutated. A mutant that does not compile is "stillborn": not counted, the
sample draws another in its place. `make mutate` compiles mutants with
-Werror=uninitialized -Werror=maybe-uninitialized: the project's -Werror
build refuses a mutant that reads a variable it no longer sets, so it is
stillborn too.

An ID is file:line:column:operator; it names the same mutant only while the
file is unchanged. equivalent.txt keys a mutant by its file, the text of its
line and the mutation, so entries survive edits elsewhere.
"""
import argparse
import hashlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADERS = ["gaia.h", "gaia_cpu.h", "gaia_cuda.h"]

# ---------------------------------------------------------------- scanning

def mask_line(line, in_comment):
    """The line with comments and string/char literals blanked (same length),
    and whether a /* comment is still open at its end."""
    out = []
    i, n = 0, len(line)
    while i < n:
        if in_comment:
            j = line.find("*/", i)
            if j < 0:
                out.append(" " * (n - i))
                i = n
            else:
                out.append(" " * (j + 2 - i))
                i = j + 2
                in_comment = False
            continue
        c = line[i]
        if line.startswith("/*", i):
            in_comment = True
            out.append("  ")
            i += 2
        elif line.startswith("//", i):
            out.append(" " * (n - i))
            i = n
        elif c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)[:n], in_comment


FUNC_START = re.compile(r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")
MACRO_START = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\(")
# A definition's attributes come before its name: __attribute__((always_inline)) void f(
ATTRIBUTE = re.compile(r"__attribute__\s*\(\(.*?\)\)")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case"}


def scan(path):
    """Yields (lineno, masked code, function name, the line whose liveness
    counts: its own, or its macro's #define) for every line of code inside a
    function body or a function-like macro's body."""
    with open(path) as f:
        lines = f.read().split("\n")
    in_comment = False
    func = None        # the function whose body we are in
    pending = None     # a definition's name seen, body not yet opened
    macro = None       # the function-like macro being continued
    macro_line = 0
    for no, raw in enumerate(lines, 1):
        code, in_comment = mask_line(raw, in_comment)
        stripped = code.strip()
        if macro is not None:
            yield no, code, macro, macro_line
            if not raw.rstrip().endswith("\\"):
                macro = None
            continue
        m = MACRO_START.match(code)
        if m:
            if raw.rstrip().endswith("\\"):
                macro, macro_line = m.group(1), no
            continue
        if stripped.startswith("#"):
            continue
        if func is None:
            if code[:1] not in ("", " ", "\t", "}", "{", "#"):
                m = FUNC_START.match(ATTRIBUTE.sub("", code))
                if m and m.group(1) not in KEYWORDS and not stripped.endswith(";"):
                    pending = m.group(1)
            if pending and "{" in code:
                k = code.index("{")
                if code.count("{") == code.count("}") and stripped.endswith("}"):
                    # a one-line definition: its body is on this line and the
                    # next line is outside any function (not inside this one)
                    yield no, " " * (k + 1) + code[k + 1:], pending, no
                    pending = None
                else:
                    func, pending = pending, None
            elif pending and stripped.endswith(";"):
                pending = None
            continue
        if code.startswith("}"):
            func = None
            continue
        yield no, code, func, no


# ---------------------------------------------------------------- operators

REL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
TOKEN = re.compile(r"<<=|>>=|<<|>>|->|\+\+|--|&&|\|\||[-+*/%&|^!<>=]=|[-+*/%<>&|^=!~?:]")
FLOAT = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)([fF]?)(?![\w.])")
INT = re.compile(r"(?<![\w.])(\d+)([uUlL]*)(?![\w.])")
ASSIGN_STMT = re.compile(r"^\s*[A-Za-z_][\w\.\[\]\->\*\s\(\)]*?(?:[-+*/|&^]|<<|>>)?=[^=].*;\s*$")
CALL_STMT = re.compile(r"^\s*[A-Za-z_]\w*\s*\(.*\)\s*;\s*$")
DECL_START = re.compile(r"^\s*(?:const\s+|static\s+|unsigned\s+|signed\s+)*(?:int|long|short|char|float|double|size_t|"
                        r"uint\d+_t|int\d+_t|gaia_\w+|[A-Za-z_]\w*_t|void|struct\s+\w+)\b[\s\*]")


def prev_significant(code, i):
    j = i - 1
    while j >= 0 and code[j] in " \t":
        j -= 1
    return code[j] if j >= 0 else ""


def mutants_of_line(code):
    """(column, length, replacement, operator) for one masked line."""
    out = []
    for m in TOKEN.finditer(code):
        tok, col = m.group(0), m.start()
        if tok in REL:
            out.append((col, len(tok), REL[tok], "rel"))
        elif tok == "&&":
            out.append((col, 2, "||", "logic"))
        elif tok == "||":
            out.append((col, 2, "&&", "logic"))
        elif tok in ("+", "-"):
            p = prev_significant(code, col)
            # binary only: after an operand (identifier, literal, ) or ])
            if p and (p.isalnum() or p in "_)]"):
                before = code[:col].rstrip()
                if re.search(r"\d[eE]$", before) and not re.search(r"[A-Za-z_]\w*$", before[:-1] + "x"):
                    continue
                if re.search(r"(?<![\w.])\d+(\.\d*)?[eE]$", before):
                    continue  # the exponent sign of a float literal
                out.append((col, 1, "-" if tok == "+" else "+", "arith"))
        elif tok == "*":
            # binary, in this code's style: spaces on both sides (a pointer
            # declarator is "float *p"), after an operand
            p = prev_significant(code, col)
            spaced = code[col - 1:col] == " " and code[col + 1:col + 2] == " "
            if spaced and p and (p.isalnum() or p in "_)]"):
                out.append((col, 1, "/", "arith"))
        elif tok == "/":
            out.append((col, 1, "*", "arith"))
        elif tok == "+=":
            out.append((col, 2, "-=", "assign"))
        elif tok == "-=":
            out.append((col, 2, "+=", "assign"))
        elif tok == "*=":
            out.append((col, 2, "/=", "assign"))
        elif tok == "/=":
            out.append((col, 2, "*=", "assign"))
        elif tok == "++":
            out.append((col, 2, "--", "incdec"))
        elif tok == "--":
            out.append((col, 2, "++", "incdec"))
    floats = []
    for m in FLOAT.finditer(code):
        floats.append((m.start(), m.end()))
        v, suf = m.group(1), m.group(2)
        val = float(v)
        out.append((m.start(1), len(v), "1.0" if val == 0 else "0.0", "const"))
        if val != 0:
            out.append((m.start(1), len(v), repr(val * 2), "const"))
    for m in INT.finditer(code):
        if any(a <= m.start() < b for a, b in floats):
            continue
        v = int(m.group(1), 10) if not m.group(1).startswith("0") or m.group(1) == "0" else None
        if v is None:
            continue
        out.append((m.start(1), len(m.group(1)), str(v + 1), "const"))
        if v != 0:
            out.append((m.start(1), len(m.group(1)), "0", "const"))
    stripped = code.strip()
    if (ASSIGN_STMT.match(code) or CALL_STMT.match(code)) and not DECL_START.match(code) \
            and not stripped.startswith(("return", "if", "for", "while", "else", "case", "do", "}")) and "{" not in code:
        out.append((len(code) - len(code.lstrip()), len(code.rstrip()) - (len(code) - len(code.lstrip())), ";", "delete"))
    return out


def live_lines(cc, cflags):
    """{(file, line)} of the lines this configuration compiles: the
    preprocessor's line markers (-dD keeps #define lines, so a macro's
    definition counts as live when its #if branch is taken). Code for MPI,
    CUDA or other MR widths that this build leaves out is not mutated."""
    cmd = [cc] + cflags + ["-DGAIA_IMPLEMENTATION", "-x", "c", "-E", "-dD", "gaia.h"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, errors="replace").stdout
    live, cur, no = set(), None, 0
    marker = re.compile(r'^# (\d+) "([^"]*)"')
    for line in out.split("\n"):
        m = marker.match(line)
        if m:
            no, cur = int(m.group(1)), os.path.basename(m.group(2))
            continue
        if cur in HEADERS and line.strip():
            live.add((cur, no))
        no += 1
    return live


def candidates(files, func_re, ranges, live):
    out = []
    for f in files:
        path = os.path.join(ROOT, f)
        for no, code, func, start in scan(path):
            if (f, start) not in live:
                continue
            if func_re and not func_re.search(func or ""):
                continue
            if ranges and not any(rf == f and a <= no <= b for rf, a, b in ranges):
                continue
            for col, length, rep, op in mutants_of_line(code):
                out.append({"file": f, "line": no, "col": col, "len": length, "rep": rep, "op": op, "func": func})
    return out


def mutant_id(m):
    return "%s:%d:%d:%s" % (m["file"], m["line"], m["col"] + 1, m["rep"] if m["op"] != "delete" else "delete")


def file_lines(f, cache={}):
    if f not in cache:
        with open(os.path.join(ROOT, f)) as fh:
            cache[f] = fh.read().split("\n")
    return cache[f]


def mutant_key(m):
    """Stable across edits elsewhere: file, the line's text, what changed where in it."""
    text = file_lines(m["file"])[m["line"] - 1]
    lead = len(text) - len(text.lstrip())
    s = "%s|%s|%d|%d|%s" % (m["file"], text.strip(), m["col"] - lead, m["len"], m["rep"])
    return hashlib.sha1(s.encode()).hexdigest()[:12]


def describe(m):
    text = file_lines(m["file"])[m["line"] - 1]
    new = text[:m["col"]] + m["rep"] + text[m["col"] + m["len"]:]
    return "%s (%s, in %s)\n      - %s\n      + %s" % (mutant_id(m), mutant_key(m), m["func"], text.strip(), new.strip())


def apply(m, srcdir):
    for h in HEADERS:
        shutil.copy(os.path.join(ROOT, h), os.path.join(srcdir, h))
    lines = list(file_lines(m["file"]))
    text = lines[m["line"] - 1]
    lines[m["line"] - 1] = text[:m["col"]] + m["rep"] + text[m["col"] + m["len"]:]
    with open(os.path.join(srcdir, m["file"]), "w") as fh:
        fh.write("\n".join(lines))


# ---------------------------------------------------------------- tests to run

def load_map(path):
    rules = []
    with open(path) as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            pat, tests = line.split(None, 1) if " " in line or "\t" in line else (line, "")
            rules.append((re.compile(pat), tests.split()))
    return rules


def tests_for(func, rules, default):
    for pat, tests in rules:
        if pat.search(func or ""):
            return tests
    return default


def load_equivalent(path):
    eq = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith("#"):
                    key, _, reason = line.partition(" ")
                    eq[key] = reason.strip()
    return eq


# ---------------------------------------------------------------- running

def run(cmd, timeout, stream_fail=False, env=None):
    """(status, output): status 'ok', 'fail' (nonzero exit or a FAIL line),
    'timeout'. With stream_fail the process is stopped at its first FAIL."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                         cwd=ROOT, env=env, text=True, errors="replace")
    out, t0 = [], time.time()
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    status = None
    while True:
        left = timeout - (time.time() - t0)
        if left <= 0:
            status = "timeout"
            break
        if not sel.select(timeout=min(left, 1.0)):
            if p.poll() is not None:
                break
            continue
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        if stream_fail and line.startswith("FAIL "):
            status = "fail"
            break
    if status is not None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    rc = p.wait()
    if status is None:
        status = "ok" if rc == 0 else "fail"
        if rc != 0 and not any(l.startswith("FAIL ") for l in out):
            last = out[-1].strip() if out else "(no output)"
            out.append("CRASH %s, after: %s\n" % ("signal %d" % -rc if rc < 0 else "exit status %d" % rc, last))
    return status, "".join(out), time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="gaia_cpu.h,gaia.h", help="comma-separated headers to mutate")
    ap.add_argument("--functions", default="", help="regex on the enclosing function (or macro) name")
    ap.add_argument("--lines", default="", help="FILE:A-B[,FILE:A-B]: only these line ranges")
    ap.add_argument("--ops", default="", help="comma-separated operators (rel,logic,arith,assign,incdec,const,delete)")
    ap.add_argument("--sample", type=int, default=100, help="mutants to run (stillborn ones do not count)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated mutant IDs to run instead of a sample")
    ap.add_argument("--plant", default="", help="a file of hand-written mutants, one a line: "
                    "FILE:OLD=>NEW (OLD must occur on one line only; # comments): run those instead")
    ap.add_argument("--tests", default="", help="test name filters for every mutant (default: tests/mutate/tests.map)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds per mutant's tests (default 5x baseline + 30)")
    ap.add_argument("--list", action="store_true", help="list the candidates and exit")
    ap.add_argument("--show", default="", help="print one mutant (by ID) and exit")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--cflags", default="-std=c99 -O1 -D_POSIX_C_SOURCE=200809L -march=native -fopenmp")
    ap.add_argument("--ldlibs", default="-lm -fopenmp")
    ap.add_argument("--objs", default="", help="the test runner's objects (default: build/tests/*.o)")
    ap.add_argument("--runner", default="build/mutate/run_tests",
                    help="where the mutant runner is linked (its ../examples must hold the examples)")
    ap.add_argument("--log", default="", help="also write the report to this file")
    a = ap.parse_args()

    files = [f for f in a.files.split(",") if f]
    ranges = []
    for r in filter(None, a.lines.split(",")):
        f, _, ab = r.rpartition(":")
        lo, _, hi = ab.partition("-")
        ranges.append((f, int(lo), int(hi or lo)))
    func_re = re.compile(a.functions) if a.functions else None
    cflags = [f for f in shlex.split(a.cflags) if f != "-Werror"]  # a mutant's new warning is not an error
    cands = candidates(files, func_re, ranges, live_lines(a.cc, cflags))
    if a.ops:
        keep = set(a.ops.split(","))
        cands = [m for m in cands if m["op"] in keep]
    if a.show or a.list:
        for m in cands:
            if a.list or mutant_id(m) == a.show:
                print(describe(m))
        if a.list:
            print("%d candidates" % len(cands))
        return 0
    if not cands:
        print("mutate: no candidate mutants in %s%s" % (a.files, " matching " + a.functions if a.functions else ""))
        return 2

    if a.plant:
        order = []
        with open(a.plant) as fh:
            for raw in fh:
                raw = raw.strip()
                if not raw or raw.startswith("#"):
                    continue
                f, rest = raw.split(":", 1)
                old, new = rest.split("=>", 1)
                hits = [i for i, text in enumerate(file_lines(f), 1) if old in text]
                if len(hits) != 1:
                    print("mutate: %r occurs on %d lines of %s (must be one)" % (old, len(hits), f))
                    return 2
                no = hits[0]
                col = file_lines(f)[no - 1].find(old)
                func = next((fn for ln, _, fn, _ in scan(os.path.join(ROOT, f)) if ln == int(no)), None)
                order.append({"file": f, "line": int(no), "col": col, "len": len(old), "rep": new, "op": "plant",
                              "func": func})
        target = len(order)
    elif a.only:
        want = a.only.split(",")
        order = [m for w in want for m in cands if mutant_id(m) == w]
        missing = [w for w in want if not any(mutant_id(m) == w for m in cands)]
        if missing:
            print("mutate: no such mutant: %s (--list names them)" % ", ".join(missing))
            return 2
        target = len(order)
    else:
        order = list(cands)
        random.Random(a.seed).shuffle(order)
        target = a.sample

    rules = load_map(os.path.join(HERE, "tests.map"))
    default_tests = next((t for p, t in rules if p.pattern == "DEFAULT"), ["core"])
    rules = [(p, t) for p, t in rules if p.pattern != "DEFAULT"]
    equivalent = load_equivalent(os.path.join(HERE, "equivalent.txt"))
    objs = a.objs.split() if a.objs else sorted(
        os.path.join("build/tests", o) for o in os.listdir(os.path.join(ROOT, "build/tests")) if o.endswith(".o"))
    runner = os.path.join(ROOT, a.runner)
    os.makedirs(os.path.dirname(runner), exist_ok=True)
    ldlibs = shlex.split(a.ldlibs)
    work = tempfile.mkdtemp(prefix="gaia-mutate-")
    src = os.path.join(work, "src")
    os.makedirs(src)
    obj = os.path.join(work, "gaia.o")
    env = dict(os.environ)
    env.setdefault("GAIA_TEST_SEED", "12345")
    report = []

    def say(s=""):
        print(s, flush=True)
        report.append(s)

    base_runner = runner + "-unmutated"

    def build(mutant):
        """The runner with a mutant (or, mutant None, the unmutated library
        into base_runner, once); False when it does not compile."""
        if mutant:
            apply(mutant, src)
        else:
            for h in HEADERS:
                shutil.copy(os.path.join(ROOT, h), os.path.join(src, h))
        h = os.path.join(src, "gaia.h")
        base = [a.cc] + cflags + ["-DGAIA_IMPLEMENTATION", "-x", "c"]
        if subprocess.run(base + ["-fsyntax-only", h], cwd=ROOT, capture_output=True).returncode:
            return False
        if subprocess.run(base + ["-c", h, "-o", obj], cwd=ROOT, capture_output=True).returncode:
            return False
        out = runner if mutant else base_runner
        return subprocess.run([a.cxx] + objs + ["-o", out, obj] + ldlibs, cwd=ROOT).returncode == 0

    baseline = {}

    def tests_of(m):
        return a.tests.split() if a.tests else tests_for(m["func"], rules, default_tests)

    def baseline_for(tests):
        key = " ".join(tests)
        if key not in baseline:
            if not baseline and not build(None):
                say("mutate: the unmutated library does not build")
                sys.exit(2)
            st, out, secs = run([base_runner] + tests, 1800, env=env)
            if st != "ok":
                say("mutate: the unmutated library fails its tests [%s]:\n%s" % (key, out[-3000:]))
                sys.exit(2)
            baseline[key] = secs
        return baseline[key]

    say("mutate: %d candidates in %s%s; %s, seed %d" % (len(cands), a.files,
        " (functions /%s/)" % a.functions if a.functions else "", "chosen mutants" if a.only or a.plant else
        "sample of %d" % target, a.seed))
    killed, survived, equiv, stillborn, done = [], [], [], 0, 0
    t_start = time.time()
    for m in order:
        if done >= target:
            break
        tests = tests_of(m)
        base = baseline_for(tests)
        if not build(m):
            stillborn += 1
            continue
        done += 1
        limit = a.timeout or base * 5 + 30
        st, out, secs = run([runner] + tests, limit, stream_fail=True, env=env)
        key = mutant_key(m)
        if st == "ok":
            if key in equivalent:
                equiv.append((m, equivalent[key]))
                verdict = "equivalent"
            else:
                survived.append(m)
                verdict = "SURVIVED"
        else:
            why = "timeout" if st == "timeout" else next((l.strip() for l in out.splitlines()
                                                           if l.startswith(("FAIL ", "CRASH "))), "failed")
            killed.append((m, why))
            verdict = "killed: " + why[:150]
        say("[%d/%d] %s %.0fs  %s" % (done, target, mutant_id(m), secs, verdict))
    shutil.rmtree(work, ignore_errors=True)
    counted = len(killed) + len(survived)
    say("")
    say("mutate: %d mutants run (%d stillborn skipped) in %.0f s: %d killed, %d survived, %d equivalent" %
        (done, stillborn, time.time() - t_start, len(killed), len(survived), len(equiv)))
    if counted:
        say("mutation score: %d/%d = %.1f%% (equivalent mutants excluded)" % (len(killed), counted,
            100.0 * len(killed) / counted))
    if equiv:
        say("\nequivalent (listed in tests/mutate/equivalent.txt):")
        for m, reason in equiv:
            say("  " + describe(m))
            say("      why: " + reason)
    if survived:
        say("\nSURVIVING MUTANTS (tests selected: see tests/mutate/tests.map):")
        for m in survived:
            say("  " + describe(m))
            say("      tests: " + " ".join(tests_of(m)))
    if a.log:
        with open(a.log, "w") as fh:
            fh.write("\n".join(report) + "\n")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
