/* Word learning with neural assemblies: the reference assembly simulator's
   learner (learner.py, LearnBrain; after Mitropolsky and Papadimitriou's
   model of word and part-of-speech acquisition) on a gaia brain.

   The brain has explicit sensory areas, one assembly of 100 neurons per
   item: PHON (a word's sound; nouns are words 0 .. nouns-1, verbs the rest),
   VISUAL (one assembly per noun: what it names is seen) and MOTOR (one per
   verb: what it names is done), and two lazy lexical areas NOUN and VERB
   (n = LEX_n, k = LEX_k). A sentence is a noun and a verb: VISUAL fires the
   noun's assembly and MOTOR the verb's, the whole sentence long; then each
   word in turn fires its PHON assembly and the brain takes a "project
   star": one step PHON -> NOUN, VERB, VISUAL -> NOUN, MOTOR -> VERB, then
   proj_rounds (2) steps in which NOUN and VERB also fire into PHON, into
   themselves and into their context area (VISUAL, MOTOR). Nothing says
   which area a word belongs to: a noun's NOUN assembly grows strong because
   VISUAL fires with it, a verb's VERB assembly because MOTOR does.
   A word is learned when its context alone brings its sound back: VISUAL
   (or MOTOR) fires the word's assembly into NOUN (VERB), that area fires
   into PHON, and PHON holds at least 75% of the word's assembly
   (gaia_brain_read_blocks), plasticity off (the reference's testIndexedWord).

   Modes (the reference's functions in brackets):
     default            train on random sentences until every word is
                        learned, then print each word's read-out and its
                        property Q figures (train_experiment_randomized,
                        testIndexedWord, test_word)
     --rounds R         R rounds of every sentence in order, then the same
                        read-outs (train, testIndexedWord)
     --simple R         the named lexicon DOG CAT JUMP RUN, R rounds of its
                        four sentences, then each named word's read-out
                        (train_simple, test_noun, test_verb)
     --lexicon-sizes A-B
                        the sentences needed to learn a lexicon of n nouns
                        and n verbs, n = A..B, for each seed of --seeds
                        (lexicon_sizes_experiment)
   Usage: assembly_learner [options]; --help lists them. */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PHON, MOTOR, VISUAL, NOUN, VERB, NAREAS };
static const char *const area_name[NAREAS] = {"PHON", "MOTOR", "VISUAL", "NOUN", "VERB"};
static const char *const named_word[4] = {"DOG", "CAT", "JUMP", "RUN"}; /* train_simple's PHON indices */

typedef struct learner {
    gaia_ctx *ctx;
    gaia_brain *b;
    double p;
    float beta;
    size_t lex_n;
    uint32_t lex_k, sense_k; /* NOUN/VERB's k; PHON/VISUAL/MOTOR's k (the reference's PHON_k, CONTEXTUAL_k) */
    int nouns, verbs, proj_rounds, verbose;
    uint64_t rng; /* the sentences' random choices (splitmix64) */
    gaia_sampler sampler; /* the lazy areas' (gaia_brain_set_sampler) */
} learner;

#define TRY(call)                                                                           \
    do {                                                                                    \
        if ((call) != GAIA_OK) {                                                            \
            fprintf(stderr, "assembly_learner: %s: %s\n", #call, gaia_last_error(l->ctx));  \
            return 0;                                                                       \
        }                                                                                   \
    } while (0)

static uint64_t next_random(learner *l) {
    uint64_t z = (l->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, n) */
static int random_below(learner *l, int n) { return (int)(next_random(l) % (uint64_t)n); }

/* The reference's LearnBrain: PHON, MOTOR, VISUAL explicit (an assembly of
   sense_k per word, verb, noun), NOUN and VERB lazy; one p, one beta. */
static int learner_brain(learner *l, uint64_t seed) {
    int lex = l->nouns + l->verbs;
    TRY(gaia_brain_create(l->ctx, l->p, seed, GAIA_DEVICE_AUTO, &l->b));
    TRY(gaia_brain_set_sampler(l->b, l->sampler));
    TRY(gaia_brain_add_area(l->b, "PHON", (size_t)lex * l->sense_k, l->sense_k, l->beta, GAIA_AREA_EXPLICIT));
    TRY(gaia_brain_add_area(l->b, "MOTOR", (size_t)l->verbs * l->sense_k, l->sense_k, l->beta, GAIA_AREA_EXPLICIT));
    TRY(gaia_brain_add_area(l->b, "VISUAL", (size_t)l->nouns * l->sense_k, l->sense_k, l->beta, GAIA_AREA_EXPLICIT));
    TRY(gaia_brain_add_area(l->b, "NOUN", l->lex_n, l->lex_k, l->beta, GAIA_AREA_LAZY));
    TRY(gaia_brain_add_area(l->b, "VERB", l->lex_n, l->lex_k, l->beta, GAIA_AREA_LAZY));
    l->rng = seed ^ 0x5DEECE66Dull;
    return 1;
}

static void fire(gaia_brain_fire *f, size_t *n, int from, int to) {
    f[*n].from = area_name[from];
    f[*n].to = area_name[to];
    (*n)++;
}

/* The reference's project_star (without mutual inhibition): the first step
   from the senses only (NOUN and VERB hold no assembly of this word yet),
   then proj_rounds steps in which NOUN and VERB fire too. */
static int project_star(learner *l) {
    gaia_brain_fire f[16];
    size_t n = 0;
    int r;
    fire(f, &n, PHON, NOUN);
    fire(f, &n, PHON, VERB);
    fire(f, &n, MOTOR, VERB);
    fire(f, &n, VISUAL, NOUN);
    TRY(gaia_brain_project(l->b, f, n));
    fire(f, &n, NOUN, PHON);
    fire(f, &n, NOUN, NOUN);
    fire(f, &n, NOUN, VISUAL);
    fire(f, &n, VERB, PHON);
    fire(f, &n, VERB, VERB);
    fire(f, &n, VERB, MOTOR);
    for (r = 0; r < l->proj_rounds; r++) TRY(gaia_brain_project(l->b, f, n));
    return 1;
}

/* A sentence "noun verb" (word indices; verbs from l->nouns on): the
   contexts fire all along, each word's sound in turn. clear: the contexts
   go quiet afterwards (parse_indexed_sentence; parse_sentence keeps them). */
static int sentence(learner *l, int noun, int verb, int clear) {
    TRY(gaia_brain_activate(l->b, "VISUAL", (uint32_t)noun));
    TRY(gaia_brain_activate(l->b, "MOTOR", (uint32_t)(verb - l->nouns)));
    TRY(gaia_brain_activate(l->b, "PHON", (uint32_t)noun));
    if (!project_star(l)) return 0;
    TRY(gaia_brain_activate(l->b, "PHON", (uint32_t)verb));
    if (!project_star(l)) return 0;
    if (clear) {
        TRY(gaia_brain_clear_winners(l->b, "VISUAL"));
        TRY(gaia_brain_clear_winners(l->b, "MOTOR"));
    }
    return 1;
}

/* testIndexedWord: plasticity off, the word's context fires into its
   lexical area, that area into PHON; *out = the PHON assembly holding at
   least 75% of its neurons, or -1 (*overlap: the best block's overlap). */
static int test_word(learner *l, int word, int clear, int *out, size_t *overlap) {
    int is_noun = word < l->nouns;
    gaia_brain_fire f;
    size_t best = 0;
    TRY(gaia_brain_set_plasticity(l->b, 0));
    TRY(gaia_brain_unfix(l->b, "PHON"));
    TRY(gaia_brain_activate(l->b, is_noun ? "VISUAL" : "MOTOR", (uint32_t)(is_noun ? word : word - l->nouns)));
    f.from = is_noun ? "VISUAL" : "MOTOR";
    f.to = is_noun ? "NOUN" : "VERB";
    TRY(gaia_brain_project(l->b, &f, 1));
    f.from = f.to;
    f.to = "PHON";
    TRY(gaia_brain_project(l->b, &f, 1));
    TRY(gaia_brain_set_plasticity(l->b, 1));
    TRY(gaia_brain_read_blocks(l->b, "PHON", (size_t)(l->nouns + l->verbs), &best, overlap));
    *out = *overlap * 4 >= (size_t)l->sense_k * 3 ? (int)best : -1;
    if (clear) {
        TRY(gaia_brain_clear_winners(l->b, "VISUAL"));
        TRY(gaia_brain_clear_winners(l->b, "MOTOR"));
    }
    return 1;
}

/* test_all_words: every word reads back as itself (stops at the first that
   does not, as the reference does). *all = 1 when all do. */
static int test_all(learner *l, int *all) {
    int w, out;
    size_t overlap;
    *all = 0;
    for (w = 0; w < l->nouns + l->verbs; w++) {
        if (!test_word(l, w, 1, &out, &overlap)) return 0;
        if (out != w) return 1;
    }
    *all = 1;
    return 1;
}

/* The summed weights of the synapses from `from`'s winners to `to`'s
   winners (the reference's get_input_from). */
static int input_from(learner *l, int from, int to, double *sum) {
    uint32_t src[1024], dst[1024];
    size_t ns = 0, nd = 0, i, j;
    *sum = 0;
    TRY(gaia_brain_winners(l->b, area_name[from], src, 1024, &ns));
    TRY(gaia_brain_winners(l->b, area_name[to], dst, 1024, &nd));
    for (i = 0; i < ns; i++)
        for (j = 0; j < nd; j++) {
            float w = 0;
            TRY(gaia_brain_synapse_weight(l->b, area_name[from], area_name[to], src[i], dst[j], &w));
            *sum += w;
        }
    return 1;
}

/* Property Q (test_word): the word's sound alone fires into NOUN and VERB
   (plasticity off); the input each receives from PHON, and how many of its
   winners each keeps when it then fires into itself. */
static int property_q(learner *l, int word, double *in_noun, double *in_verb, size_t *keep_noun,
                      size_t *keep_verb) {
    gaia_brain_fire f[2];
    uint32_t before[2][1024], after[1024];
    size_t nb[2], na, *keep[2];
    int a;
    keep[0] = keep_noun;
    keep[1] = keep_verb;
    TRY(gaia_brain_set_plasticity(l->b, 0));
    TRY(gaia_brain_activate(l->b, "PHON", (uint32_t)word));
    f[0].from = f[1].from = "PHON";
    f[0].to = "VERB";
    f[1].to = "NOUN";
    TRY(gaia_brain_project(l->b, f, 2));
    if (!input_from(l, PHON, NOUN, in_noun) || !input_from(l, PHON, VERB, in_verb)) return 0;
    for (a = 0; a < 2; a++) TRY(gaia_brain_winners(l->b, area_name[NOUN + a], before[a], 1024, &nb[a]));
    f[0].from = f[0].to = "NOUN";
    f[1].from = f[1].to = "VERB";
    TRY(gaia_brain_project(l->b, f, 2));
    for (a = 0; a < 2; a++) {
        TRY(gaia_brain_winners(l->b, area_name[NOUN + a], after, 1024, &na));
        TRY(gaia_assembly_overlap(l->ctx, before[a], nb[a], after, na, keep[a]));
    }
    TRY(gaia_brain_set_plasticity(l->b, 1));
    return 1;
}

/* Prints each word's read-out and property Q; returns 1 when every word
   reads back as itself (*learned). */
static int report_words(learner *l, int *learned) {
    int w;
    *learned = 1;
    for (w = 0; w < l->nouns + l->verbs; w++) {
        int out;
        size_t overlap, kn, kv;
        double in_n, in_v;
        if (!test_word(l, w, 1, &out, &overlap)) return 0;
        printf("word %d (%s): its context reads back word %d (%zu of %u neurons)\n", w, w < l->nouns ? "noun" : "verb",
               out, overlap, l->sense_k);
        if (out != w) *learned = 0;
        if (!property_q(l, w, &in_n, &in_v, &kn, &kv)) return 0;
        printf("  its sound alone: input into NOUN %.1f, into VERB %.1f; recurrence keeps %zu of %u in NOUN, "
               "%zu of %u in VERB\n",
               in_n, in_v, kn, l->lex_k, kv, l->lex_k);
    }
    return 1;
}

/* train_experiment_randomized: random sentences until every word is learned
   (tested after each sentence from the second on); *needed = the number of
   the sentence after which they were (counted from 0, as the reference
   does), or -1 after max sentences. */
static int learn_randomly(learner *l, int max, int *needed) {
    int i, all;
    *needed = -1;
    for (i = 0; i < max; i++) {
        int noun = random_below(l, l->nouns), verb = l->nouns + random_below(l, l->verbs);
        if (!sentence(l, noun, verb, 1)) return 0;
        if (i > 0) {
            if (!test_all(l, &all)) return 0;
            if (all) {
                *needed = i;
                return 1;
            }
        }
    }
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: assembly_learner [--help] [--seed N] [--nouns N] [--verbs N] [--p P] [--beta B] [--lex-n N]\n"
            "                        [--lex-k K] [--max N] [--sampler S] [--rounds R | --simple R | --lexicon-sizes A-B [--seeds A-B]]\n"
            "Learns words from sensory streams with a brain of assemblies (the reference simulator's\n"
            "learner): PHON (sounds), VISUAL (nouns' contexts) and MOTOR (verbs') explicit, NOUN and VERB\n"
            "lazy. Sentences \"noun verb\" fire both contexts and each word's sound; a word is learned when\n"
            "its context, through its lexical area, brings back 75%% of its sound's assembly.\n"
            "  default          random sentences until every word is learned; then each word's read-out\n"
            "                   and property Q (its sound's input into NOUN and VERB, their recurrence)\n"
            "  --rounds R       R rounds of every sentence in order, then the read-outs\n"
            "  --simple R       the lexicon DOG CAT JUMP RUN, R rounds of its four sentences (contexts\n"
            "                   kept between sentences), then each word's read-out\n"
            "  --lexicon-sizes A-B\n"
            "                   for n = A..B nouns and as many verbs and each seed of --seeds: the random\n"
            "                   sentences needed (the reference's lexicon_sizes_experiment), mean and sd\n"
            "  --seed N         the brain's seed (default 1)    --seeds A-B  (default 1-5)\n"
            "  --nouns N, --verbs N   lexicon (default 2 and 2)\n"
            "  --p P (0.05)  --beta B (0.06)  --lex-n N (100000)  --lex-k K (50): the reference\n"
            "                   experiment's brain (PHON, VISUAL, MOTOR: 100 neurons an assembly)\n"
            "  --max N          random sentences at most (default 500)\n"
            "  --sampler exact|truncnorm  how NOUN and VERB draw new candidates: gaia's exact binomial\n"
            "                   tail (default) or the reference simulator's truncated normal\n"
            "  -v               the sentences needed for each test\n");
}

static int parse_range(const char *s, unsigned long long *a, unsigned long long *b) {
    char end;
    return sscanf(s, "%llu-%llu%c", a, b, &end) == 2 && *a <= *b;
}

int main(int argc, char **argv) {
    learner L, *l = &L;
    int i, rc = 0, mode = 0, rounds = 0, max = 500, learned = 0;
    unsigned long long seed = 1, s0 = 1, s1 = 5, n0 = 2, n1 = 2;
    memset(l, 0, sizeof *l);
    l->p = 0.05;
    l->beta = 0.06f;
    l->lex_n = 100000;
    l->lex_k = 50;
    l->sense_k = 100;
    l->nouns = l->verbs = 2;
    l->proj_rounds = 2;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-v")) {
            l->verbose = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--seeds") && parse_range(v, &s0, &s1)) {
        } else if (!strcmp(a, "--lexicon-sizes") && parse_range(v, &n0, &n1) && n0 >= 1 && n1 <= 64) mode = 3;
        else if (!strcmp(a, "--rounds") && atoi(v) > 0) {
            mode = 1;
            rounds = atoi(v);
        } else if (!strcmp(a, "--simple") && atoi(v) > 0) {
            mode = 2;
            rounds = atoi(v);
        } else if (!strcmp(a, "--nouns") && atoi(v) > 0 && atoi(v) <= 64) l->nouns = atoi(v);
        else if (!strcmp(a, "--verbs") && atoi(v) > 0 && atoi(v) <= 64) l->verbs = atoi(v);
        else if (!strcmp(a, "--p") && atof(v) > 0 && atof(v) < 1) l->p = atof(v);
        else if (!strcmp(a, "--beta") && atof(v) >= 0) l->beta = (float)atof(v);
        else if (!strcmp(a, "--lex-n") && atol(v) > 0) l->lex_n = (size_t)atol(v);
        else if (!strcmp(a, "--lex-k") && atoi(v) > 0 && atoi(v) <= 1024) l->lex_k = (uint32_t)atoi(v);
        else if (!strcmp(a, "--max") && atoi(v) > 0) max = atoi(v);
        else if (!strcmp(a, "--sampler") && (!strcmp(v, "exact") || !strcmp(v, "truncnorm")))
            l->sampler = strcmp(v, "exact") == 0 ? GAIA_SAMPLER_EXACT : GAIA_SAMPLER_TRUNCNORM;
        else {
            fprintf(stderr, "assembly_learner: bad option '%s %s'\n", a, v);
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &l->ctx) != GAIA_OK) return 1;
    printf("learner: p = %g, beta = %g, NOUN/VERB n = %zu k = %u, PHON/VISUAL/MOTOR k = %u, sampler %s\n", l->p,
           (double)l->beta, l->lex_n, l->lex_k, l->sense_k, l->sampler == GAIA_SAMPLER_TRUNCNORM ? "truncnorm" : "exact");
    if (mode == 3) {
        unsigned long long n, s;
        for (n = n0; n <= n1 && !rc; n++) {
            double sum = 0, sum2 = 0, t0 = gaia_time_s();
            int count = 0, lo = 1 << 30, hi = -1;
            l->nouns = l->verbs = (int)n;
            for (s = s0; s <= s1; s++) {
                int needed;
                if (!learner_brain(l, s) || !learn_randomly(l, max, &needed)) {
                    rc = 1;
                    break;
                }
                gaia_brain_destroy(l->b);
                l->b = NULL;
                if (needed >= 0) printf("size %llu seed %llu: %d sentences\n", n, s, needed);
                else printf("size %llu seed %llu: none sentences (not learned after %d)\n", n, s, max);
                fflush(stdout);
                if (needed < 0) continue;
                count++;
                sum += needed;
                sum2 += (double)needed * needed;
                if (needed < lo) lo = needed;
                if (needed > hi) hi = needed;
            }
            if (count)
                printf("size %llu: %d of %llu seeds learned the lexicon, sentences mean %.1f sd %.1f range %d-%d "
                       "(%.1f s)\n",
                       n, count, s1 - s0 + 1, sum / count,
                       count > 1 ? sqrt((sum2 - sum * sum / count) / (count - 1)) : 0.0, lo, hi,
                       gaia_time_s() - t0);
        }
    } else if (mode == 2) {
        /* train_simple: (CAT JUMP) (CAT RUN) (DOG JUMP) (DOG RUN), contexts kept */
        static const int sent[4][2] = {{1, 2}, {1, 3}, {0, 2}, {0, 3}};
        int r, k;
        l->nouns = l->verbs = 2;
        if (!learner_brain(l, seed)) return 1;
        for (r = 0; r < rounds && !rc; r++)
            for (k = 0; k < 4 && !rc; k++) rc = !sentence(l, sent[k][0], sent[k][1], 0);
        learned = 1;
        for (k = 0; k < 4 && !rc; k++) {
            int out;
            size_t overlap;
            rc = !test_word(l, k, 0, &out, &overlap);
            printf("%s: its context reads back %s (%zu of %u neurons)\n", named_word[k],
                   out >= 0 ? named_word[out] : "nothing", overlap, l->sense_k);
            if (out != k) learned = 0;
        }
        if (!rc) printf("after %d rounds: %s\n", rounds, learned ? "every word learned" : "not every word learned");
    } else {
        int needed = -1, r, nn, vv;
        if (!learner_brain(l, seed)) return 1;
        if (mode == 1) {
            for (r = 0; r < rounds && !rc; r++)
                for (nn = 0; nn < l->nouns && !rc; nn++)
                    for (vv = 0; vv < l->verbs && !rc; vv++) rc = !sentence(l, nn, l->nouns + vv, 1);
        } else {
            rc = !learn_randomly(l, max, &needed);
            if (!rc) {
                if (needed >= 0) printf("every word learned after sentence %d (counted from 0)\n", needed);
                else printf("not every word learned after %d sentences\n", max);
            }
        }
        if (!rc) rc = !report_words(l, &learned);
        if (!rc) printf("%s\n", learned ? "every word learned" : "not every word learned");
    }
    if (l->b) gaia_brain_destroy(l->b);
    gaia_ctx_destroy(l->ctx);
    return rc;
}
