#!/usr/bin/env python3
"""Builds gaia.h and gaia_cpu.h from the module files under src/.

    python3 tools/amalgamate.py              writes gaia.h and gaia_cpu.h
    python3 tools/amalgamate.py --out DIR    writes them into DIR instead

Each header is the concatenation of the pieces that its manifest
(src/gaia.h.parts, src/gaia_cpu.h.parts) lists, in order. A module file
opens with lines starting "//!" (what it holds; "module:", "uses:",
"hooks:" and "switch:" lines) and then holds one or more pieces, each
starting with a line "//@ part NAME"; both kinds of line are left out of
the headers.

A module with a "switch: GAIA_NO_X" line can be left out: each of its
pieces is wrapped in #ifndef GAIA_NO_X ... #endif (a module without a
switch of its own that uses such modules: in the test of theirs), and the
line "//@ switches" (once, in gaia.h, before every guarded piece) becomes
the implications, #define GAIA_NO_Y when a module Y uses is left out.

Nothing is written unless the dependency rules hold (tools/check_deps.py:
a file refers only to its own module and those it uses, which come before
it; "hooks:" names the few references back). Python 3 standard library only."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_deps  # noqa: E402
from srcfiles import HEADERS, ROOT, Error, load, switches, guard  # noqa: E402


# ---------------------------------------------------------------- generation
def implications(own, closure):
    """The lines that stand for "//@ switches" in gaia.h."""
    out = ['/* Leaving modules out (manual, section 2): a module goes with every\n',
           '   module it uses. Generated from the modules\' "uses:" lines (src/). */\n']
    for m in sorted(own, key=lambda m: own[m]):
        for s in sorted(closure[m] - {own[m]}):
            out.append('#if defined(%s) && !defined(%s)\n#define %s\n#endif\n' % (s, own[m], own[m]))
    return out


def piece_lines(f, piece, own, closure, guards):
    lines = f.pieces[piece][1]
    if any(l.rstrip('\r\n') == '//@ switches' for l in lines):
        body = []
        for l in lines:
            body += implications(own, closure) if l.rstrip('\r\n') == '//@ switches' else [l]
        lines = body
    g = guard(f.module, guards)
    if not g:
        return lines
    if len(g) == 1:
        return ['#ifndef %s\n' % g[0]] + lines + ['#endif /* %s */\n' % g[0]]
    return (['#if %s\n' % ' && '.join('!defined(%s)' % s for s in g)] + lines +
            ['#endif /* %s */\n' % ' && '.join('!%s' % s for s in g)])


def generate(manifests, files):
    own, closure, guards = switches(files)
    marks = [(rel, p) for h in HEADERS for rel, p, _ in manifests[h]
             if any(l.rstrip('\r\n') == '//@ switches' for l in files[rel].pieces[p][1])]
    if own and [h for h in HEADERS for rel, p, _ in manifests[h] if (rel, p) in marks] != ['gaia.h']:
        raise Error('gaia.h needs exactly one line "//@ switches" (where the implications go), '
                    'before every guarded piece')
    out = {}
    for h in HEADERS:
        out[h] = ''.join(''.join(piece_lines(files[rel], piece, own, closure, guards))
                         for rel, piece, _ in manifests[h])
    return out


def main(argv):
    out_dir = ROOT
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--out' and args:
            out_dir = args.pop(0)
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    try:
        manifests, files = load()
        errors = check_deps.check_deps(manifests, files)
        if errors:
            for e in errors:
                print('amalgamate: ' + e, file=sys.stderr)
            print('amalgamate: %d violation(s) of the dependency rules (tools/check_deps.py); nothing written'
                  % len(errors), file=sys.stderr)
            return 1
        for h, text in generate(manifests, files).items():
            path = os.path.join(out_dir, h)
            if os.path.isfile(path):
                with open(path, newline='') as fh:
                    if fh.read() == text:
                        continue  # unchanged: keep its time stamp (no rebuild)
            tmp = path + '.tmp'
            with open(tmp, 'w', newline='') as fh:
                fh.write(text)
            os.replace(tmp, path)
    except Error as e:
        print('amalgamate: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
