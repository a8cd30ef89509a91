#!/bin/sh
# doctest.sh - turns the documentation's examples into test programs, so that
# a snippet in the manual or the README can never show output it does not
# print, or stop compiling, without `make test` failing.
#
#   sh tests/doctest.sh OUTDIR cpu|cuda FILE...     (the Makefile runs it)
#
# What is an example:
#   README.md (any *.md)   every fenced block that opens with ```c (the
#                          tests are named doc_readme_SECTION for README.md,
#                          doc_PAGE_SECTION for docs/PAGE.md)
#   gaia.h (any *.h)       in the manual (the first comment), the lines
#                          indented by 7 or more spaces that follow a line
#                          "Example:" (text may come before the colon, as in
#                          "Example, a hierarchy:"); the block ends at the
#                          first non-blank line indented by fewer than 7
# How it becomes a program (OUTDIR/NAME.c):
#   - a snippet with its own main() is used as it is;
#   - otherwise its preprocessor lines go to file scope and the rest into
#     main(); when the snippet does not call gaia_ctx_create, main first makes
#     a context `ctx` (NULL desc) and destroys it after the snippet.
#   The program includes gaia.h and stdio/stdlib/string/math; #line
#   directives point compiler errors at the documentation's own lines.
# Checked output: a comment "prints: TEXT" (// or /* */) in a snippet says
# that the program's output contains TEXT; several are found in order, and
# "..." inside TEXT stands for anything (OUTDIR/NAME.expect, one per line).
# A snippet that calls gaia_cuda_* is skipped in a cpu build.
# Also written: OUTDIR/doc_cases.h, the list for tests/test_doc.c, and
# OUTDIR/build_lines.FILE, each file's cc/nvcc command lines (from ```sh
# blocks and the manual), which the doc suite compares.
set -eu
[ $# -ge 3 ] || { echo "usage: sh tests/doctest.sh OUTDIR cpu|cuda FILE..." >&2; exit 2; }
out=$1
mode=$2
shift 2
mkdir -p "$out"
rm -f "$out"/*.c "$out"/*.expect "$out"/build_lines.*
: > "$out/doc_cases.h.new"

for src in "$@"; do
    case "$src" in
    README.md | */README.md) kind=md tag=readme ;;
    *.md) kind=md tag=$(basename "$src" .md | tr -c 'A-Za-z0-9\n' '_') ;;
    *.h) kind=manual tag=manual ;;
    *) echo "doctest.sh: do not know how to read $src" >&2; exit 2 ;;
    esac
    base=$(basename "$src")
    awk -v kind="$kind" -v tag="$tag" -v src="$src" -v base="$base" -v out="$out" -v mode="$mode" '
    # A section title as a name: up to a colon or bracket, at most 4 words.
    function slug(s,   w, n, i, r) {
        sub(/[:(].*$/, "", s)
        s = tolower(s)
        gsub(/[^a-z0-9]+/, " ", s)
        n = split(s, w, " ")
        r = ""
        for (i = 1; i <= n && i <= 4; i++) r = r (i > 1 ? "_" : "") w[i]
        return r
    }
    function add_line(text, n) { body[++nlines] = text; lineno[nlines] = n }
    # The program of one snippet: file-scope lines, the includes, main.
    function finish(   name, i, own_main, makes_ctx, uses_cuda, file, expf, t, last, p, k) {
        if (nlines == 0) return
        k = ++count[section]
        name = "doc_" tag "_" section (k > 1 ? "_" k : "")
        own_main = makes_ctx = uses_cuda = 0
        for (i = 1; i <= nlines; i++) {
            if (body[i] ~ /(^|[^a-z_])main[ \t]*\(/) own_main = 1
            if (body[i] ~ /gaia_ctx_create[ \t]*\(/) makes_ctx = 1
            if (body[i] ~ /gaia_cuda_[a-z_]+[ \t]*\(/) uses_cuda = 1
        }
        if (uses_cuda && mode != "cuda") {
            printf "GT_DOC(%s, \"%s\", %d, \"uses gaia_cuda_*: needs a CUDA build (make CUDA=1 test)\")\n", \
                name, base, lineno[1] >> (out "/doc_cases.h.new")
            nlines = 0
            return
        }
        printf "GT_DOC(%s, \"%s\", %d, NULL)\n", name, base, lineno[1] >> (out "/doc_cases.h.new")
        file = out "/" name ".c"
        expf = out "/" name ".expect"
        printf "/* %s:%d, extracted by tests/doctest.sh */\n", base, lineno[1] > file
        if (!own_main) {
            for (i = 1; i <= nlines; i++)
                if (body[i] ~ /^[ \t]*#/) printf "#line %d \"%s\"\n%s\n", lineno[i], base, body[i] > file
            printf "#include \"gaia.h\"\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n" > file
            printf "int main(void) {\n" > file
            if (!makes_ctx) printf "gaia_ctx *ctx;\nif (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;\n{\n" > file
        }
        last = -1
        for (i = 1; i <= nlines; i++) {
            if (!own_main && body[i] ~ /^[ \t]*#/) continue
            if (lineno[i] != last + 1) printf "#line %d \"%s\"\n", lineno[i], base > file
            print body[i] > file
            last = lineno[i]
        }
        if (!own_main) {
            if (!makes_ctx) printf "}\ngaia_ctx_destroy(ctx);\n" > file
            printf "return 0;\n}\n" > file
        }
        close(file)
        printf "" > expf
        for (i = 1; i <= nlines; i++) {
            p = index(body[i], "prints:")
            if (!p) continue
            t = substr(body[i], p + 7)
            sub(/\*\/.*$/, "", t)
            gsub(/^[ \t]+|[ \t]+$/, "", t)
            print t > expf
        }
        close(expf)
        nlines = 0
    }
    function build_line(s) {
        gsub(/^[ \t]+|[ \t]+$/, "", s)
        if (joined != "") { joined = joined " " s } else if (s ~ /^(cc|nvcc|c\+\+) /) { joined = s } else return
        if (joined ~ /\\$/) { sub(/[ \t]*\\$/, "", joined); return }
        gsub(/[ \t]+/, " ", joined)
        print joined > (out "/build_lines." base)
        joined = ""
    }
    BEGIN { section = "intro"; nlines = 0; inblock = 0; inmanual = (kind == "manual"); joined = "" }
    kind == "md" {
        if (!inblock && /^## /) { section = slug(substr($0, 4)); next }
        if (!inblock && /^```c[ \t]*$/) { inblock = "c"; next }
        if (!inblock && /^```sh[ \t]*$/) { inblock = "sh"; next }
        if (inblock && /^```/) { if (inblock == "c") finish(); inblock = 0; next }
        if (inblock == "c") add_line($0, NR)
        if (inblock == "sh") build_line($0)
        next
    }
    kind == "manual" && inmanual {
        if (/^\*\//) { if (inblock) finish(); inmanual = 0; next }
        if (/^   [0-9]+\. [A-Z]/) { if (inblock) finish(); inblock = 0; s = $0; sub(/^ *[0-9]+\. /, "", s); section = slug(s); next }
        if (/^       +(cc|nvcc) / || joined != "") build_line($0)
        if (inblock) {
            if ($0 ~ /^[ \t]*$/) { add_line("", NR); next }
            if ($0 ~ /^       /) { add_line(substr($0, 8), NR); next }
            finish(); inblock = 0
        }
        if (/^ *Example[^:]*:[ \t]*$/) inblock = 1
        next
    }
    END { if (inblock == 1 || inblock == "c") finish() }
    ' "$src"
done

mv -f "$out/doc_cases.h.new" "$out/doc_cases.h"
