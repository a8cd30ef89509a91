/* The recursive parser of the reference assembly simulator
   (recursive_parser.py, after Mitropolsky, Collins and Papadimitriou, "A
   biologically plausible parser", 2021) on a gaia brain: the parser of
   examples/assembly_parser.c with one more lazy area, DEPCLAUSE, for
   dependent clauses "NOUN that ... ,".

   The brain is the parser's (assembly_rules.h) with the reference's
   recursive sizes: the lazy areas have n = 10^5, k = 50 (DET: k = 20), and
   each word runs 30 project rounds. A transitive verb also opens (and after
   its rounds closes) the fibre VERB-DEPCLAUSE. At a noun followed by
   "that", instead of the noun's post rules: DEPCLAUSE and its fibres from
   SUBJ and OBJ open, LEX and VERB close, every other area that fires keeps
   its assembly while DEPCLAUSE forms one (30 rounds), and the states are
   reset with DEPCLAUSE open; the clause's words follow. At the word before
   ",": the states are reset, the words before "that" are read again with
   one project step each and no plasticity (bringing back the main clause's
   assemblies), DEPCLAUSE closes, and the main clause goes on. The read-out
   follows SUBJ-DEPCLAUSE and OBJ-DEPCLAUSE as the reference does:
   DEPCLAUSE fires into VERB, VERB into LEX and SUBJ, and SUBJ into LEX,
   giving "noun -DEP-VERB-> verb" and "verb -SUBJ-> subject".

   Usage: assembly_recursive_parser [--seed N] [--sampler exact|truncnorm] [--rounds N] [-v] ["SENTENCE" ...] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "assembly_rules.h"

static void usage(FILE *f) {
    fprintf(f, "usage: assembly_recursive_parser [--help] [--seed N] [--sampler exact|truncnorm] [--rounds N] [-v]\n"
               "                                 [\"SENTENCE\" ...]\n"
               "Parses English sentences with dependent clauses (\"dogs that chase cats , run\") with a brain\n"
               "of assemblies: the reference simulator's recursive parser. Words: those of assembly_parser,\n"
               "and \"that\" after a noun opens a dependent clause, \",\" (a word of its own) closes it.\n"
               "Prints the dependencies read out of the brain (\"head -AREA-> dependent\"; a clause:\n"
               "\"noun -DEP-VERB-> verb\" and \"verb -SUBJ-> subject\") and a tree. Without sentences: five\n"
               "examples. About 1-3 s a sentence on a 2-core VM (lazy areas of 10^5 neurons).\n"
               "  --seed N     the brain's seed (default 1)\n"
               "  --sampler exact|truncnorm\n"
               "               how the lazy areas draw new candidates (default exact)\n"
               "  --rounds N   project rounds per word (default 30)\n"
               "  -v           show each word's fixed and cleared areas and the fires of its first round\n");
}

int main(int argc, char **argv) {
    static const char *const examples[] = {
        "dogs that chase cats , run",          "the dogs that chase mice , bite people",
        "cats that people love , run quickly", "the big dogs that bite cats , run",
        "people that love dogs , chase cats",
    };
    const char *sentences[64];
    int nsent = 0, i, rc = 0;
    uint64_t seed = 1;
    parser p;
    memset(&p, 0, sizeof p);
    p.prog = "assembly_recursive_parser";
    p.rounds = 30;
    p.nareas = NAREAS;
    p.lazy_n = 100000;
    p.lazy_k = 50;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (parser_option(&p, argc, argv, &i)) {
            continue;
        } else if (argv[i][0] != '-' && nsent < 64) {
            sentences[nsent++] = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!nsent)
        for (i = 0; i < (int)(sizeof examples / sizeof examples[0]); i++) sentences[nsent++] = examples[i];
    if (gaia_ctx_create(NULL, &p.ctx) != GAIA_OK) return 1;
    for (i = 0; i < nsent; i++) {
        double t0 = gaia_time_s();
        int d;
        printf("%s\n", sentences[i]);
        if (parse(&p, sentences[i], seed)) {
            for (d = 0; d < p.ndeps; d++) printf("  %s\n", p.deps[d]);
            printf("  tree: %s\n  (%.2f s, %zu steps)\n", p.tree, gaia_time_s() - t0, gaia_brain_steps(p.b));
        } else {
            printf("  (no parse)\n");
            rc = 1;
        }
        gaia_brain_destroy(p.b);
        p.b = NULL;
        fflush(stdout);
    }
    gaia_ctx_destroy(p.ctx);
    return rc;
}
