#!/usr/bin/env python3
"""The dependency rules of the module files under src/ (run by
tools/amalgamate.py before it writes anything, and by make check-headers).

A module is a file under src/, or several that name it in "//! module:"
(hrr.h and cpu/hrr.h are the module hrr). Each file lists in "//! uses:"
the modules it may use. The rules:

  1. Every gaia identifier (a name starting gaia_, gaia__, GAIA_ or GAIA__)
     that a file refers to is defined in its own module or in one it uses.
     The definitions are found by scanning every file: function definitions,
     variables, #define NAME, typedef names, struct/union/enum tags,
     enumerators (and the names an X-macro list such as GAIA_STATUS_LIST
     defines). A prototype is no definition: the API that one piece declares
     and another defines belongs to the module that defines it.
  2. What a module uses comes before it in each manifest that lists both
     (its first piece earlier), and no modules use each other in a circle.
  3. The way back is explicit: a file may refer to a name that a later
     module defines only when it lists the name under "//! hooks:" (the
     context's teardown reaching each module, the tape reaching the layer
     kernels' gradients, ...). A hook that is not needed is an error too, and
     so is a module under "uses:" that the file does not need.
  4. Switches: a hook into a module that a switch ("//! switch: GAIA_NO_X")
     can leave out sits inside "#ifndef GAIA_NO_X" (or "#if !defined(...)"),
     and every piece of a module that a switch can leave out pairs its own
     #if and #endif (the generator wraps it whole).
  5. Optional uses: a module listed under "//! optional:" has a switch and
     comes before the file, as one under "uses:", but the file goes on
     without it: every reference to its names sits inside "#ifndef" of its
     switch (hrr's codebook files need formats; hrr itself does not). So an
     optional module's switch implies nothing about the file's module.

Not references: names in comments and strings, after . or ->, in #if,
#ifdef and #elif lines, a macro named inside an "#ifdef THAT_MACRO" branch
(an optional link), and struct X * or struct X; (an incomplete type does).
The scan reads tokens, not C: a struct's members reached through a pointer
(be->layer->adamw) are no reference, so such a dependency is not seen.

    python3 tools/check_deps.py           checks; exit status 1 on a violation
    python3 tools/check_deps.py --graph   also prints each module's uses and hooks"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srcfiles  # noqa: E402
from srcfiles import HEADERS  # noqa: E402

# ---------------------------------------------------------------- C scanning
GAIA = re.compile(r'^(gaia_|GAIA_)')
TOKEN = re.compile(r'[A-Za-z_]\w*|\d[\w.]*|->|\.\.\.|.', re.S)
NOT_NAMES = {'__attribute__', '__asm__', '__declspec', '_Pragma', 'sizeof', 'return', 'if', 'while', 'for',
             'switch', 'defined'}


def strip_c(text):
    """Comments and string/character literals become spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '/' and text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == '/' and text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


class Scan:
    """The gaia names one file defines, declares and refers to."""

    def __init__(self):
        self.defs = {}  # name -> first line
        self.decls = {}  # prototypes: name -> first line
        self.refs = {}  # name -> [(line, the switches known undefined there)]

    def define(self, name, line):
        if GAIA.match(name):
            self.defs.setdefault(name, line)

    def refer(self, name, line, off=frozenset()):
        if GAIA.match(name):
            self.refs.setdefault(name, []).append((line, off))


def scan_file(f):
    s = Scan()
    for piece in f.order:
        first, lines = f.pieces[piece]
        scan_text(strip_c(''.join(lines)), first, s)
    return s


def scan_text(text, first_line, s):
    """Preprocessor lines, then the C tokens of the rest (see scan_code)."""
    code = []  # (token, line, soft, off)
    known = []  # stack: macros that the enclosing #ifdef branches test for
    offs = []  # stack: macros that the enclosing branches require undefined
    cxx = []  # stack: inside "#ifdef __cplusplus" (extern "C" braces: not code)
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        ln = first_line + i
        line = lines[i]
        while line.endswith('\\') and i + 1 < len(lines):
            i += 1
            line = line[:-1] + ' ' + lines[i]
        i += 1
        d = re.match(r'\s*#\s*(\w*)(.*)$', line)
        if not d:
            if any(cxx):
                continue
            soft = set().union(*known) if known else set()
            off = frozenset().union(*offs) if offs else frozenset()
            for m in TOKEN.finditer(line):
                t = m.group(0)
                if t.strip():
                    code.append((t, ln, t in soft, off))
            continue
        kw, rest = d.group(1), d.group(2)
        if kw in ('if', 'ifdef', 'ifndef'):
            known.append(tested(kw, rest))
            offs.append(untested(kw, rest))
            cxx.append(kw == 'ifdef' and rest.strip() == '__cplusplus')
        elif kw in ('elif', 'else'):
            if known:
                # #else of "#ifdef X" (or "#if defined(X)" alone): X is undefined there
                offs[-1] = set(known[-1]) if kw == 'else' and len(known[-1]) == 1 else set()
                known[-1] = tested('if', rest) if kw == 'elif' else set()
                cxx[-1] = False
        elif kw == 'endif':
            if known:
                known.pop()
                offs.pop()
                cxx.pop()
        elif kw == 'define':
            m = re.match(r'\s*([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$', rest)
            if not m:
                continue
            s.define(m.group(1), ln)
            body = m.group(4)
            params = [p.strip() for p in (m.group(3) or '').split(',')]
            for p in params:  # X-macro lists: X(GAIA_OK, "ok") defines GAIA_OK
                if p and re.match(r'^[A-Za-z_]\w*$', p):
                    for name in re.findall(r'\b%s\(\s*([A-Za-z_]\w*)' % re.escape(p), body):
                        s.define(name, ln)
            soft = set().union(*known) if known else set()
            off = frozenset().union(*offs) if offs else frozenset()
            for name in re.findall(r'[A-Za-z_]\w*', body):
                if name not in soft and name not in params:
                    s.refer(name, ln, off)
        # #undef, #include, #error, #pragma, #line: no references
    scan_code(code, s)


def untested(kw, rest):
    """The macros a condition requires to be undefined (#ifndef X, !defined(X) && ...)."""
    if kw == 'ifndef':
        return {rest.strip()}
    if kw == 'ifdef':
        return set()
    names = set()
    for part in rest.split('&&'):
        m = re.match(r'\s*\(?\s*!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?\s*\)?\s*$', part)
        if m:
            names.add(m.group(1))
    return names


def tested(kw, rest):
    """The macros a condition requires to be defined (its true branch may name them)."""
    if kw == 'ifdef':
        return {rest.strip()}
    if kw == 'ifndef':
        return set()
    names = set()
    for part in rest.split('&&'):
        m = re.match(r'\s*\(?\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?\s*\)?\s*$', part)
        if m:
            names.add(m.group(1))
    return names


def scan_code(toks, s):
    """Definitions (functions, variables, typedefs, struct/union/enum tags,
    enumerators), prototypes and references among C tokens."""
    n = len(toks)
    depth = 0
    stmt = []  # tokens of the current file-scope statement: (index)
    enum_levels = []  # brace depths of the enum bodies we are in
    expect_enumerator = False
    i = 0
    while i < n:
        t, ln, soft, off = toks[i]
        prev = toks[i - 1][0] if i else ''
        nxt = toks[i + 1][0] if i + 1 < n else ''
        if t == '{':
            if depth == 0 and is_function_head(toks, stmt):
                name = function_name(toks, stmt)
                if name:
                    s.define(name, toks[stmt[0]][1])
                    refer_all(toks, stmt, s, skip={name})
                stmt = []
                i = skip_body(toks, i + 1, s)
                continue
            if prev in ('struct', 'union', 'enum') or (i >= 2 and toks[i - 2][0] in ('struct', 'union', 'enum')):
                if prev not in ('struct', 'union', 'enum'):
                    s.define(prev, ln)
                if 'enum' in (prev, toks[i - 2][0] if i >= 2 else ''):
                    enum_levels.append(depth + 1)
                    expect_enumerator = True
            depth += 1
            if depth == 1:
                stmt.append(i)
            i += 1
            continue
        if t == '}':
            if enum_levels and enum_levels[-1] == depth:
                enum_levels.pop()
            if depth == 0:  # a brace a macro opened (the FFT's GAIA_FFT_AHEAD): not ours
                i += 1
                continue
            depth -= 1
            if depth == 0:
                stmt.append(i)
            i += 1
            continue
        if enum_levels and enum_levels[-1] == depth:
            if expect_enumerator and re.match(r'[A-Za-z_]', t):
                s.define(t, ln)
                expect_enumerator = False
                i += 1
                continue
            if t == ',':
                expect_enumerator = True
        if depth == 0:
            if t == ';':
                end_statement(toks, stmt, s)
                stmt = []
            else:
                stmt.append(i)
            i += 1
            continue
        # inside an aggregate or initializer at file scope
        if depth > 0:
            stmt.append(i)
        i += 1


def is_function_head(toks, stmt):
    if not stmt:
        return False
    words = [toks[k][0] for k in stmt]
    if 'typedef' in words or '=' in words:
        return False
    if words[0] in ('struct', 'union', 'enum') or (len(words) > 1 and words[-2] in ('struct', 'union', 'enum')):
        return False
    if words[-1] in ('struct', 'union', 'enum') or (words and words[-1] not in (')',) and not GAIA.match(words[-1])):
        # "... ) {" ends a function head; a macro after ")" (GAIA__X) too
        return False
    return '(' in words


def function_name(toks, stmt):
    """The name before the last parenthesised group at file scope that is
    not a macro's (upper case: an attribute, or a macro that defines
    functions before this one, as the FFT's GAIA_FFT_VDEF2(2))."""
    depth, name = 0, None
    for a, k in enumerate(stmt):
        t = toks[k][0]
        if t == '(':
            if depth == 0 and a > 0:
                w = toks[stmt[a - 1]][0]
                if w not in NOT_NAMES and re.match(r'[A-Za-z_]\w*$', w) and w != w.upper():
                    name = w
            depth += 1
        elif t == ')':
            depth -= 1
    return name


def skip_body(toks, i, s):
    """Refers every gaia name in a function body; returns the index after it."""
    depth = 1
    while i < len(toks) and depth:
        t, ln, soft, off = toks[i]
        if t == '{':
            depth += 1
        elif t == '}':
            depth -= 1
        elif not soft and not (i and toks[i - 1][0] in ('.', '->')) and not struct_pointer(toks, i):
            s.refer(t, ln, off)
        i += 1
    return i


def struct_pointer(toks, i):
    """struct X * or struct X; : X need not be complete here."""
    return (i > 0 and toks[i - 1][0] in ('struct', 'union', 'enum') and i + 1 < len(toks)
            and toks[i + 1][0] in ('*', ';'))


def refer_all(toks, stmt, s, skip=()):
    for k in stmt:
        t, ln, soft, off = toks[k]
        if t in skip or soft or (k and toks[k - 1][0] in ('.', '->')) or struct_pointer(toks, k):
            continue
        s.refer(t, ln, off)


def end_statement(toks, stmt, s):
    if not stmt:
        return
    words = [toks[k][0] for k in stmt]
    top = []  # indices into stmt at brace depth 0 and outside [...]
    depth = 0
    for a, w in enumerate(words):
        if w in ('{', '['):
            depth += 1
        elif w in ('}', ']'):
            depth -= 1
        elif depth == 0:
            top.append(a)
    tw = [words[a] for a in top]
    defined = set()
    if 'typedef' in tw:
        m = None
        for a in range(len(tw) - 3):
            if tw[a] == '(' and tw[a + 1] == '*' and tw[a + 3] == ')':
                m = tw[a + 2]
                break
        if not m:  # the last name outside parentheses: typedef float v __attribute__((...));
            depth, outside = 0, []
            for w in tw:
                depth += (w == '(') - (w == ')')
                if depth == 0 and w not in ('(', ')') and w not in NOT_NAMES:
                    outside.append(w)
            m = next((w for w in reversed(outside) if re.match(r'[A-Za-z_]\w*$', w)), None)
        name = m
        if name:
            s.define(name, toks[stmt[0]][1])
            defined.add(name)
    elif '=' in tw:
        a = tw.index('=')
        name = next((w for w in reversed(tw[:a]) if re.match(r'[A-Za-z_]\w*$', w)), None)
        if name:
            s.define(name, toks[stmt[0]][1])
            defined.add(name)
    elif '(' in tw:
        a = tw.index('(')
        if a + 2 < len(tw) and tw[a + 1] == '*':
            s.define(tw[a + 2], toks[stmt[0]][1])  # a function pointer variable
            defined.add(tw[a + 2])
        elif a > 0:
            name = tw[a - 1]
            if re.match(r'[A-Za-z_]\w*$', name) and name not in NOT_NAMES:
                if GAIA.match(name):
                    s.decls.setdefault(name, toks[stmt[0]][1])
                defined.add(name)  # a prototype: declared, not referred to
    elif tw and tw[0] not in ('struct', 'union', 'enum') or len(tw) > 2:
        name = next((w for w in reversed(tw) if re.match(r'[A-Za-z_]\w*$', w)), None)
        if name and not (len(tw) >= 2 and tw[-2] in ('struct', 'union', 'enum')):
            s.define(name, toks[stmt[0]][1])  # a variable
            defined.add(name)
    refer_all(toks, stmt, s, skip=defined)


# ---------------------------------------------------------------- the rules
def check_deps(manifests, files, graph=False):
    modules = {}  # module -> [files]
    for f in files.values():
        modules.setdefault(f.module, []).append(f)
    scans = {rel: scan_file(f) for rel, f in files.items()}
    definers = {}  # name -> {module: (file, line)}
    for rel, s in scans.items():
        for name, line in s.defs.items():
            definers.setdefault(name, {}).setdefault(files[rel].module, (rel, line))
    # position of each module in each manifest: its first piece
    pos = {h: {} for h in HEADERS}
    for h in HEADERS:
        for k, (rel, piece, n) in enumerate(manifests[h]):
            pos[h].setdefault(files[rel].module, (k, n))
    own, closure, guards = srcfiles.switches(files)
    errors = []
    # a piece that a switch can leave out is whole: its #if and #endif pair up
    for rel in sorted(files):
        f = files[rel]
        if not srcfiles.guard(f.module, guards):
            continue
        for piece in f.order:
            first, lines = f.pieces[piece]
            depth = 0
            for k, line in enumerate(lines):
                d = re.match(r'\s*#\s*(if|ifdef|ifndef|endif)\b', line)
                if d:
                    depth += -1 if d.group(1) == 'endif' else 1
                    if depth < 0:
                        errors.append('%s:%d: #endif of an #if outside piece %s' % (f.where(), first + k, piece))
                        depth = 0
            if depth:
                errors.append('%s: piece %s leaves %d #if open' % (f.where(), piece, depth))
    for rel in sorted(files):
        f, s = files[rel], scans[rel]
        for u in f.uses:
            if u not in modules:
                errors.append('%s: uses %s: no such module' % (f.where(), u))
            elif u == f.module:
                errors.append('%s: uses its own module %s' % (f.where(), u))
        for u in f.optional:
            if u not in modules:
                errors.append('%s: optional %s: no such module' % (f.where(), u))
            elif u == f.module or u in f.uses:
                errors.append('%s: optional %s: its own module, or listed under "uses:" too' % (f.where(), u))
            elif u not in own:
                errors.append('%s: optional %s: the module has no switch, so it is always there: list it under '
                              '"uses:"' % (f.where(), u))
        hooks = {name: mod for name, mod in f.hooks}
        used, hooked = set(), set()
        for name in sorted(s.refs, key=lambda x: s.refs[x][0][0]):
            d = definers.get(name)
            if not d or f.module in d:
                continue
            ok = [m for m in d if m in f.uses]
            if ok:
                used.update(ok)
                continue
            opt = [m for m in d if m in f.optional and m in own]
            if opt:
                used.update(opt)
                sw = own[opt[0]]
                if sw not in closure.get(f.module, ()):
                    for line, off in s.refs[name]:
                        if sw not in off:
                            errors.append('%s:%d: %s (module %s, optional here) is not there when %s is defined: '
                                          'refer to it inside "#ifndef %s"' % (f.where(), line, name, opt[0], sw, sw))
                continue
            if name in hooks:
                hooked.add(name)
                for m in d:
                    sw = own.get(m)
                    if sw and sw not in closure.get(f.module, ()):
                        for line, off in s.refs[name]:
                            if sw not in off:
                                errors.append('%s:%d: %s (module %s) is not there when %s is defined: refer to it '
                                              'inside "#ifndef %s"' % (f.where(), line, name, m, sw, sw))
                continue
            m, (drel, dline) = sorted(d.items())[0]
            errors.append('%s:%d: %s is defined in module %s (src/%s:%d), which %s does not list under "uses:"'
                          % (f.where(), s.refs[name][0][0], name, m, drel, dline, f.module))
        for key, listed in (('uses', f.uses), ('optional', f.optional)):
            for u in listed:
                if u in modules and u not in used and (key == 'uses' or u in own):
                    errors.append('%s: lists %s under "%s:" but refers to no name that %s defines'
                                  % (f.where(), u, key, u))
        for name, mod in f.hooks:
            d = definers.get(name)
            if name not in s.refs:
                errors.append('%s: hook %s: not referred to here' % (f.where(), name))
            elif not d:
                errors.append('%s: hook %s: defined in no module' % (f.where(), name))
            elif name not in hooked:
                errors.append('%s: hook %s: defined in %s, which this file may use anyway: not a hook'
                              % (f.where(), name, '/'.join(sorted(d))))
            elif mod and mod not in d:
                errors.append('%s: hook %s: defined in %s, not in %s' % (f.where(), name, '/'.join(sorted(d)), mod))
    # the order: what a module uses comes before it in every manifest that holds both
    for rel in sorted(files):
        f = files[rel]
        for u in f.uses + f.optional:
            for h in HEADERS:
                if f.module in pos[h] and u in pos[h] and pos[h][u][0] > pos[h][f.module][0]:
                    errors.append('%s: uses %s, but src/%s.parts lists %s (line %d) after %s (line %d)'
                                  % (f.where(), u, h, u, pos[h][u][1], f.module, pos[h][f.module][1]))
    # and no circle (hooks are the way back)
    uses = {m: sorted({u for f in fs for u in f.uses if u in modules}) for m, fs in modules.items()}
    state = {}

    def visit(m, path):
        state[m] = 1
        for u in uses[m]:
            if state.get(u) == 1:
                errors.append('modules use each other in a circle: %s' % ' -> '.join(path[path.index(u):] + [u]))
            elif not state.get(u):
                visit(u, path + [u])
        state[m] = 2
    for m in sorted(modules):
        if not state.get(m):
            visit(m, [m])
    if graph:
        order = []
        for h in HEADERS:
            for rel, piece, _ in manifests[h]:
                if files[rel].module not in order:
                    order.append(files[rel].module)
        for m in order:
            fs = modules[m]
            back = {}
            for f in fs:
                for name, _ in f.hooks:
                    for d in definers.get(name, {}):
                        back[d] = back.get(d, 0) + 1
            print('%s%s  (%s)' % (m, ' [%s]' % own[m] if m in own else '', ' '.join(f.where() for f in fs)))
            print('    uses: %s' % (' '.join(u for u in order if u in uses[m]) or '-'))
            opt = {u for f in fs for u in f.optional}
            if opt:
                print('    optional: %s' % ' '.join(u for u in order if u in opt))
            if back:
                print('    hooks into: %s' % ' '.join('%s (%d)' % (d, back[d]) for d in order if d in back))
    return errors


def run(graph=False):
    """The violations, one line each ([] when the rules hold)."""
    manifests, files = srcfiles.load()
    return check_deps(manifests, files, graph)


def main(argv):
    graph = argv == ['--graph']
    if argv and not graph:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        errors = run(graph)
    except srcfiles.Error as e:
        print('check_deps: %s' % e, file=sys.stderr)
        return 1
    for e in errors:
        print('check_deps: ' + e, file=sys.stderr)
    if errors:
        print('check_deps: %d violation(s) of the dependency rules' % len(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
