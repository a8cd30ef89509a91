/* A parser of English sentences made of neural assemblies: the parser of
   Mitropolsky, Collins and Papadimitriou ("A biologically plausible parser",
   2021) on a gaia brain.

   The brain has an explicit lexicon area LEX (one assembly of k neurons per
   word: word i is neurons [i*k, (i+1)*k)) and lazy syntactic areas (SUBJ,
   OBJ, VERB, DET, ADJ, ADVERB, PREP, PREP_P). Every fibre between two areas
   starts closed, and of the areas only LEX, SUBJ and VERB are open. Each
   word of the sentence
     1. fires its lexicon assembly (fixed),
     2. applies its kind's "pre" rules: open (or close) fibres and areas,
        each for a numbered reason (a fibre stays closed while any reason
        holds it),
     3. fixes the assembly of every area that fires and that LEX does not
        fire into, and clears the areas that LEX fires into (a new word
        takes them over),
     4. runs 20 project rounds along the open fibres (gaia_brain_project_open),
     5. applies its "post" rules.
   Then the read-out, with plasticity off and nothing fixed: from VERB,
   along every fibre the parse used (gaia_brain_fibre_fires) that the
   read-out rules allow, project into the dependent area, then from that
   area into LEX, and read the word there (gaia_brain_read_blocks, at least
   70% of k). That gives the dependencies "head -AREA-> dependent", and a
   tree, recursively. The brain, the rules and the read-out live in
   assembly_rules.h, which the recursive parser shares.

   The lexicon, the rules and the read-out follow the reference simulator's
   parser, and so do the read-outs, but not for every seed: a determiner
   comes back into LEX at 14-20 of its 20 neurons (in the reference too), so
   now and then one falls below the 70% and reads as <NON-WORD>. --seeds A-B
   parses each sentence with every seed from A to B and counts those parses.
   Usage: assembly_parser [--seed N | --seeds A-B] [--rounds N] [-v] ["SENTENCE" ...]   */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "assembly_rules.h"

static void usage(FILE *f) {
    fprintf(f, "usage: assembly_parser [--help] [--seed N | --seeds A-B] [--sampler exact|truncnorm] [--rounds N] [-v]\n"
               "                       [\"SENTENCE\" ...]\n"
               "Parses English sentences with a brain of assemblies (the parser of Mitropolsky et al.,\n"
               "2021): a lexicon area and syntactic areas whose fibres each word opens and closes,\n"
               "then reads the dependencies out of the brain. Without sentences: the reference's\n"
               "examples. Words: the a dogs cats mice people man woman chase love bite saw run fly\n"
               "are of in big bad quickly.\n"
               "Not every seed reads every word: a determiner comes back into the lexicon at 14-20\n"
               "of its 20 neurons (in the reference simulator too) and, below 14, reads as <NON-WORD>.\n"
               "Over seeds 1-1000 that is 0.2%% of the parses of the default sentences, but 8-11%% of\n"
               "sentences with both \"a\" and \"the\", which read the wrong determiner in another 1-2%%.\n"
               "--seeds measures it.\n"
               "  --seed N     the brain's seed (default 1)\n"
               "  --seeds A-B  parse each sentence with every seed from A to B and print, per sentence,\n"
               "               the parses that read a <NON-WORD> (and their seeds), the distinct trees of\n"
               "               the others, and in total the rate of parses with a <NON-WORD> read-out\n"
               "               (about 0.01-0.03 s a parse on a 2-core VM)\n"
               "  --sampler exact|truncnorm\n"
               "               how the lazy areas draw new candidates: gaia's exact binomial tail\n"
               "               (default) or the reference simulator's truncated normal\n"
               "  --rounds N   project rounds per word (default 20)\n"
               "  -v           show, for each word, the areas fixed or cleared and the fires of its first round\n");
}

/* --seeds A-B: every sentence parsed with every seed from A to B. Per
   sentence: the parses that read a <NON-WORD> and their seeds, and the
   trees of the others with their counts (one tree: the parser reads the
   same dependencies whatever the seed). Returns the exit status. */
enum { MAX_TREES = 8 };
static int seed_sweep(parser *p, const char *const *sentences, int nsent, uint64_t first, uint64_t last) {
    unsigned long total = 0, total_bad = 0, total_fail = 0, total_odd = 0;
    int i;
    double t0 = gaia_time_s();
    for (i = 0; i < nsent; i++) {
        static char trees[MAX_TREES][1024];
        unsigned long count[MAX_TREES] = {0}, bad = 0, fail = 0, other = 0, n = 0, most = 0;
        int ntrees = 0, j;
        char bad_seeds[256] = "";
        uint64_t s;
        for (s = first;; s++) {
            n++;
            if (!parse(p, sentences[i], s)) {
                fail++; /* a word not in the lexicon, or a gaia error: the same for every seed */
                n--;
                gaia_brain_destroy(p->b);
                p->b = NULL;
                break;
            } else if (strstr(p->tree, "<NON-WORD>")) {
                size_t len = strlen(bad_seeds);
                bad++;
                /* the seeds while they fit, then " ..." */
                if (len + 24 < sizeof bad_seeds)
                    snprintf(bad_seeds + len, sizeof bad_seeds - len, " %llu", (unsigned long long)s);
                else if (len + 5 < sizeof bad_seeds && bad_seeds[len - 1] != '.')
                    snprintf(bad_seeds + len, sizeof bad_seeds - len, " ...");
            } else {
                for (j = 0; j < ntrees && strcmp(trees[j], p->tree) != 0; j++) {
                }
                if (j == ntrees && ntrees < MAX_TREES) strcpy(trees[ntrees++], p->tree);
                if (j < ntrees) count[j]++;
                else other++;
            }
            gaia_brain_destroy(p->b);
            p->b = NULL;
            if (s == last) break;
        }
        if (fail) {
            printf("%s\n  (no parse)\n", sentences[i]);
            total_fail++;
            continue;
        }
        printf("%s\n  %lu of %lu parses read a <NON-WORD>%s%s\n", sentences[i], bad, n, bad ? ", seeds" : "", bad_seeds);
        for (j = 0; j < ntrees; j++) {
            printf("  %lu x tree: %s\n", count[j], trees[j]);
            if (count[j] > most) most = count[j];
        }
        if (other) printf("  %lu parses with yet other trees\n", other);
        fflush(stdout);
        /* parses without a <NON-WORD> whose tree is not the sentence's most common one */
        for (j = 0; j < ntrees; j++) total_odd += count[j];
        total_odd += other;
        total_odd -= most;
        total += n;
        total_bad += bad;
    }
    printf("seeds %llu-%llu, %d sentences, sampler %s: %lu of %lu parses (%.1f%%) have a <NON-WORD> read-out, %lu "
           "(%.1f%%) another tree than their sentence's most common (%.0f s)\n",
           (unsigned long long)first, (unsigned long long)last, nsent,
           p->sampler == GAIA_SAMPLER_TRUNCNORM ? "truncnorm" : "exact", total_bad, total,
           total ? 100.0 * (double)total_bad / (double)total : 0.0, total_odd,
           total ? 100.0 * (double)total_odd / (double)total : 0.0, gaia_time_s() - t0);
    return total_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    static const char *const examples[] = {
        "cats chase mice", "people bite dogs", "the big dogs chase the cats", "dogs run quickly",
        "cats are bad", "the man saw the woman", "dogs quickly chase cats", "cats run in people",
        "a bad woman saw a big man", "the cats of people bite mice",
    };
    const char *sentences[64];
    int nsent = 0, i, rc = 0;
    uint64_t seed = 1, first = 0, last = 0;
    int sweep = 0;
    parser p;
    memset(&p, 0, sizeof p);
    p.prog = "assembly_parser";
    p.rounds = 20;
    p.nareas = NAREAS - 1; /* no DEPCLAUSE */
    p.lazy_n = 10000;
    p.lazy_k = 100;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            unsigned long long a, b;
            char end;
            if (sscanf(argv[++i], "%llu-%llu%c", &a, &b, &end) != 2 || a > b) {
                fprintf(stderr, "assembly_parser: --seeds wants A-B with A <= B, not '%s'\n", argv[i]);
                usage(stderr);
                return 2;
            }
            first = a;
            last = b;
            sweep = 1;
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
    if (sweep) {
        rc = seed_sweep(&p, sentences, nsent, first, last);
        gaia_ctx_destroy(p.ctx);
        return rc;
    }
    for (i = 0; i < nsent; i++) {
        double t0 = gaia_time_s();
        int d, ok;
        printf("%s\n", sentences[i]);
        ok = parse(&p, sentences[i], seed);
        if (ok) {
            for (d = 0; d < p.ndeps; d++) printf("  %s\n", p.deps[d]);
            printf("  tree: %s\n  (%.2f s, %zu steps)\n", p.tree, gaia_time_s() - t0, gaia_brain_steps(p.b));
            if (strstr(p.tree, "<NON-WORD>"))
                printf("  (<NON-WORD>: the word came back into LEX at under 70%% of its neurons, as a determiner\n"
                       "  does with some seeds; --seeds A-B counts how often)\n");
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
