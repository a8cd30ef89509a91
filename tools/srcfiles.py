"""The module files under src/ and the manifests that order their pieces
(src/gaia.h.parts, src/gaia_cpu.h.parts): read, checked for form, and the
modules' switches worked out. tools/amalgamate.py writes the headers from
them and tools/check_deps.py checks their dependency rules.

A module file opens with lines starting "//!": what it holds, then
"module: NAME" (when it belongs to a module of another name), "uses:",
"optional:" (earlier modules that a switch can leave out, referred to only
inside #ifndef of their switch), "hooks:" (a line may go on, indented, on
the next) and "switch: GAIA_NO_X".
Then its pieces, each opened by "//@ part NAME"; a piece of gaia.h may hold
the line "//@ switches". Python 3 standard library only."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, 'src')
HEADERS = ('gaia.h', 'gaia_cpu.h')


class Error(Exception):
    pass


# ---------------------------------------------------------------- module files
class ModuleFile:
    """One file under src/: its opening lines and its pieces."""

    def __init__(self, rel):
        self.rel = rel  # e.g. "cpu/gemm.h"
        self.path = os.path.join(SRC, rel)
        self.module = rel[:-2] if rel.endswith('.h') else rel
        self.uses = []
        self.optional = []  # modules referred to only where their switch is undefined
        self.hooks = []  # (name, module named in parentheses or None)
        self.switch = None  # "GAIA_NO_X": the macro that leaves this module out
        self.about = []
        self.pieces = {}  # name -> (first line number of its body, [lines])
        self.order = []
        with open(self.path, newline='') as fh:
            lines = fh.read().splitlines(keepends=True)
        i = 0
        self._key = None
        while i < len(lines) and lines[i].startswith('//!'):
            self._opening(lines[i][3:].strip(), i + 1, lines[i][3:])
            i += 1
        piece = None
        for n in range(i, len(lines)):
            line = lines[n]
            if line.rstrip('\r\n') == '//@ switches' and piece is not None:
                self.pieces[piece][1].append(line)
            elif line.startswith('//@'):
                m = re.match(r'//@ part ([A-Za-z0-9_.-]+)\s*$', line)
                if not m:
                    raise Error('%s:%d: a line starting "//@" must be "//@ part NAME" or "//@ switches"'
                                % (self.where(), n + 1))
                piece = m.group(1)
                if piece in self.pieces:
                    raise Error('%s:%d: piece %s appears twice' % (self.where(), n + 1, piece))
                self.pieces[piece] = (n + 2, [])
                self.order.append(piece)
            elif line.startswith('//!'):
                raise Error('%s:%d: "//!" lines belong at the top of the file' % (self.where(), n + 1))
            elif piece is None:
                raise Error('%s:%d: code before the first "//@ part" line' % (self.where(), n + 1))
            else:
                self.pieces[piece][1].append(line)
        if not self.pieces:
            raise Error('%s: no "//@ part NAME" line' % self.where())

    def where(self):
        return 'src/' + self.rel

    def _opening(self, text, n, raw=''):
        m = re.match(r'(uses|optional|module|hooks|switch):(.*)$', text)
        if not m and self._key == 'hooks' and raw.startswith('     '):
            m = re.match(r'(hooks):(.*)$', 'hooks:' + text)  # a hooks line continued
        if not m:
            self._key = None
            self.about.append(text)
            return
        self._key = m.group(1)
        key, val = m.group(1), m.group(2).strip()
        if key == 'module':
            self.module = val
        elif key == 'switch':
            if not re.match(r'GAIA_NO_[A-Z0-9_]+$', val):
                raise Error('%s:%d: a switch is named GAIA_NO_SOMETHING' % (self.where(), n))
            self.switch = val
        elif key in ('uses', 'optional'):
            if val not in ('', '-', '(nothing)'):
                getattr(self, key).extend(val.replace(',', ' ').split())
        else:
            for name, mod in re.findall(r'([A-Za-z_]\w*)(?:\s*\(([\w/]+)\))?', val):
                self.hooks.append((name, mod or None))


def read_manifest(header):
    path = os.path.join(SRC, header + '.parts')
    entries = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise Error('src/%s.parts:%d: want "FILE PIECE"' % (header, n))
            entries.append((parts[0], parts[1], n))
    return entries


def load():
    manifests = {h: read_manifest(h) for h in HEADERS}
    files = {}
    for h in HEADERS:
        for rel, piece, n in manifests[h]:
            if rel not in files:
                if not os.path.isfile(os.path.join(SRC, rel)):
                    raise Error('src/%s.parts:%d: no file src/%s' % (h, n, rel))
                files[rel] = ModuleFile(rel)
            if piece not in files[rel].pieces:
                raise Error('src/%s.parts:%d: src/%s has no piece %s' % (h, n, rel, piece))
    listed = {(rel, piece) for h in HEADERS for rel, piece, _ in manifests[h]}
    for rel, f in files.items():
        for piece in f.order:
            if (rel, piece) not in listed:
                raise Error('%s: piece %s is in no manifest' % (f.where(), piece))
    seen = set()
    for h in HEADERS:
        for rel, piece, n in manifests[h]:
            if (rel, piece) in seen:
                raise Error('src/%s.parts:%d: %s %s is listed twice' % (h, n, rel, piece))
            seen.add((rel, piece))
    # every file under src/ that looks like a module file must be in a manifest
    for d, _, names in os.walk(SRC):
        for name in names:
            rel = os.path.relpath(os.path.join(d, name), SRC).replace(os.sep, '/')
            if name.endswith('.h') and rel not in files:
                raise Error('src/%s is in no manifest' % rel)
    return manifests, files


# ---------------------------------------------------------------- switches
def switches(files):
    """Per module: its own switch (or None) and the switches that leave it
    out, its own and those of every module it uses (directly or not)."""
    own, uses = {}, {}
    for f in files.values():
        uses.setdefault(f.module, set()).update(f.uses)
        if f.switch:
            if own.get(f.module, f.switch) != f.switch:
                raise Error('%s: module %s has two switches' % (f.where(), f.module))
            own[f.module] = f.switch
    out, guards = {}, {}

    def closure(m, seen):
        if m in out:
            return out[m]
        got = {own[m]} if m in own else set()
        for u in uses.get(m, ()):
            if u not in seen:
                got |= closure(u, seen | {u})
        out[m] = got
        return got
    def guard(m, seen):
        if m not in guards:
            got = {own[m]} if m in own else set()
            if m not in own:
                for u in uses.get(m, ()):
                    if u not in seen:
                        got |= guard(u, seen | {u})
            guards[m] = got
        return guards[m]
    for m in uses:
        closure(m, {m})
        guard(m, {m})
    return own, out, guards


def guard(module, guards):
    """The switches a piece of module tests: its own (the implications at
    the top of gaia.h define it when a module it uses is left out), or,
    for a module without one, those of the modules it uses."""
    return sorted(guards.get(module, ()))
