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
   tree, recursively.

   The lexicon, the rules and the read-out follow the reference simulator's
   parser, and so do the read-outs, but not for every seed: a determiner
   comes back into LEX at 14-20 of its 20 neurons (in the reference too), so
   now and then one falls below the 70% and reads as <NON-WORD>. --seeds A-B
   parses each sentence with every seed from A to B and counts those parses.
   Usage: assembly_parser [--seed N | --seeds A-B] [--rounds N] [-v] ["SENTENCE" ...]   */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

/* ---- areas ---- */
enum { LEX, DET, SUBJ, OBJ, VERB, ADJ, ADVERB, PREP, PREP_P, NAREAS };
static const char *const area_name[NAREAS] = {"LEX", "DET", "SUBJ", "OBJ", "VERB", "ADJ", "ADVERB", "PREP", "PREP_P"};
/* The areas whose mutual fibres learn fast (the reference's "recurrent"
   areas; DET is not one of them). */
static const int fast_area[NAREAS] = {0, 0, 1, 1, 1, 1, 1, 1, 1};

/* ---- rules ----
   A rule opens or closes a two-way fibre (both directions) or an area, for
   a reason. A word kind has rules before its project rounds and after. */
typedef struct rule {
    char what;   /* 'f' a fibre between areas a and b, 'a' area a, 0 ends a list */
    char close;  /* 1 inhibit, 0 disinhibit */
    signed char a, b;
    unsigned char reason;
} rule;
#define OPEN_F(x, y, r) {'f', 0, x, y, r}
#define CLOSE_F(x, y, r) {'f', 1, x, y, r}
#define OPEN_A(x, r) {'a', 0, x, 0, r}
#define CLOSE_A(x, r) {'a', 1, x, 0, r}
#define END {0, 0, 0, 0, 0}

typedef struct word_kind {
    const char *name;
    rule pre[16], post[32];
} word_kind;

enum { NOUN, TRANS_VERB, INTRANS_VERB, COPULA, ADVERB_W, DETERMINER, ADJECTIVE, PREPOSITION };
static const word_kind kinds[] = {
    {"noun",
     {OPEN_F(LEX, SUBJ, 0), OPEN_F(LEX, OBJ, 0), OPEN_F(LEX, PREP_P, 0), OPEN_F(DET, SUBJ, 0), OPEN_F(DET, OBJ, 0),
      OPEN_F(DET, PREP_P, 0), OPEN_F(ADJ, SUBJ, 0), OPEN_F(ADJ, OBJ, 0), OPEN_F(ADJ, PREP_P, 0), OPEN_F(VERB, OBJ, 0),
      OPEN_F(PREP_P, PREP, 0), OPEN_F(PREP_P, SUBJ, 0), OPEN_F(PREP_P, OBJ, 0), END},
     {CLOSE_A(DET, 0), CLOSE_A(ADJ, 0), CLOSE_A(PREP_P, 0), CLOSE_A(PREP, 0), CLOSE_F(LEX, SUBJ, 0),
      CLOSE_F(LEX, OBJ, 0), CLOSE_F(LEX, PREP_P, 0), CLOSE_F(ADJ, SUBJ, 0), CLOSE_F(ADJ, OBJ, 0),
      CLOSE_F(ADJ, PREP_P, 0), CLOSE_F(DET, SUBJ, 0), CLOSE_F(DET, OBJ, 0), CLOSE_F(DET, PREP_P, 0),
      CLOSE_F(VERB, OBJ, 0), CLOSE_F(PREP_P, PREP, 0), CLOSE_F(PREP_P, VERB, 0), OPEN_F(LEX, SUBJ, 1),
      OPEN_F(LEX, OBJ, 1), OPEN_F(DET, SUBJ, 1), OPEN_F(DET, OBJ, 1), OPEN_F(ADJ, SUBJ, 1), OPEN_F(ADJ, OBJ, 1),
      CLOSE_F(PREP_P, SUBJ, 0), CLOSE_F(PREP_P, OBJ, 0), CLOSE_F(VERB, ADJ, 0), END}},
    {"transitive verb",
     {OPEN_F(LEX, VERB, 0), OPEN_F(VERB, SUBJ, 0), OPEN_F(VERB, ADVERB, 0), OPEN_A(ADVERB, 1), END},
     {CLOSE_F(LEX, VERB, 0), OPEN_A(OBJ, 0), CLOSE_A(SUBJ, 0), CLOSE_A(ADVERB, 0), OPEN_F(PREP_P, VERB, 0), END}},
    {"intransitive verb",
     {OPEN_F(LEX, VERB, 0), OPEN_F(VERB, SUBJ, 0), OPEN_F(VERB, ADVERB, 0), OPEN_A(ADVERB, 1), END},
     {CLOSE_F(LEX, VERB, 0), CLOSE_A(SUBJ, 0), CLOSE_A(ADVERB, 0), OPEN_F(PREP_P, VERB, 0), END}},
    {"copula",
     {OPEN_F(LEX, VERB, 0), OPEN_F(VERB, SUBJ, 0), END},
     {CLOSE_F(LEX, VERB, 0), OPEN_A(OBJ, 0), CLOSE_A(SUBJ, 0), OPEN_F(ADJ, VERB, 0), END}},
    {"adverb",
     {OPEN_A(ADVERB, 0), OPEN_F(LEX, ADVERB, 0), END},
     {CLOSE_F(LEX, ADVERB, 0), CLOSE_A(ADVERB, 1), END}},
    {"determiner",
     {OPEN_A(DET, 0), OPEN_F(LEX, DET, 0), END},
     {CLOSE_F(LEX, DET, 0), CLOSE_F(VERB, ADJ, 0), END}},
    {"adjective",
     {OPEN_A(ADJ, 0), OPEN_F(LEX, ADJ, 0), END},
     {CLOSE_F(LEX, ADJ, 0), CLOSE_F(VERB, ADJ, 0), END}},
    {"preposition",
     {OPEN_A(PREP, 0), OPEN_F(LEX, PREP, 0), END},
     {CLOSE_F(LEX, PREP, 0), OPEN_A(PREP_P, 0), CLOSE_F(LEX, SUBJ, 1), CLOSE_F(LEX, OBJ, 1), CLOSE_F(DET, SUBJ, 1),
      CLOSE_F(DET, OBJ, 1), CLOSE_F(ADJ, SUBJ, 1), CLOSE_F(ADJ, OBJ, 1), END}},
};

/* The lexicon: word i is LEX's assembly i. */
static const struct { const char *word; int kind; } lexicon[] = {
    {"the", DETERMINER},      {"a", DETERMINER},       {"dogs", NOUN},      {"cats", NOUN},
    {"mice", NOUN},           {"people", NOUN},        {"chase", TRANS_VERB}, {"love", TRANS_VERB},
    {"bite", TRANS_VERB},     {"of", PREPOSITION},     {"big", ADJECTIVE},  {"bad", ADJECTIVE},
    {"run", INTRANS_VERB},    {"fly", INTRANS_VERB},   {"quickly", ADVERB_W}, {"in", PREPOSITION},
    {"are", COPULA},          {"man", NOUN},           {"woman", NOUN},     {"saw", TRANS_VERB},
};
enum { NWORDS = sizeof lexicon / sizeof lexicon[0] };

/* Which fibres the read-out follows out of each area (into LEX: the word). */
static const int readout[NAREAS][NAREAS] = {
    /* LEX */ {0},
    /* DET */ {[LEX] = 1},
    /* SUBJ */ {[LEX] = 1, [DET] = 1, [ADJ] = 1, [PREP_P] = 1},
    /* OBJ */ {[LEX] = 1, [DET] = 1, [ADJ] = 1, [PREP_P] = 1},
    /* VERB */ {[LEX] = 1, [SUBJ] = 1, [OBJ] = 1, [PREP_P] = 1, [ADVERB] = 1, [ADJ] = 1},
    /* ADJ */ {[LEX] = 1},
    /* ADVERB */ {[LEX] = 1},
    /* PREP */ {[LEX] = 1},
    /* PREP_P */ {[LEX] = 1, [PREP] = 1, [ADJ] = 1, [DET] = 1},
};

/* ---- the brain ---- */
typedef struct parser {
    gaia_ctx *ctx;
    gaia_brain *b;
    int rounds, verbose;
    gaia_sampler sampler; /* the lazy areas' (gaia_brain_set_sampler) */
    /* the read-out: dependencies and a tree in text */
    char deps[64][96];
    int ndeps;
    char tree[1024];
} parser;

#define TRY(call)                                                                      \
    do {                                                                               \
        if ((call) != GAIA_OK) {                                                       \
            fprintf(stderr, "assembly_parser: %s: %s\n", #call, gaia_last_error(p->ctx)); \
            return 0;                                                                  \
        }                                                                              \
    } while (0)

/* The reference parser's brain: p = 0.1; LEX explicit, 20 words of k = 20;
   the others lazy, n = 10^4, k = 100 (DET: k = 20); beta 0.2, except 1.0
   between LEX and the fast areas, 0.05 for their recurrence and 0.5
   between two of them. Everything closed for reason 0 but the areas LEX,
   SUBJ and VERB; self fibres stay open (an area's recurrence comes with
   being engaged by an open fibre: gaia_brain_project_open). */
static int parser_brain(parser *p, uint64_t seed) {
    int x, y;
    TRY(gaia_brain_create(p->ctx, 0.1, seed, GAIA_DEVICE_AUTO, &p->b));
    TRY(gaia_brain_set_sampler(p->b, p->sampler));
    TRY(gaia_brain_add_area(p->b, area_name[LEX], NWORDS * 20, 20, 0.2f, GAIA_AREA_EXPLICIT));
    for (x = 1; x < NAREAS; x++)
        TRY(gaia_brain_add_area(p->b, area_name[x], 10000, x == DET ? 20 : 100, 0.2f, GAIA_AREA_LAZY));
    for (x = 0; x < NAREAS; x++)
        if (fast_area[x]) {
            TRY(gaia_brain_set_beta(p->b, area_name[LEX], area_name[x], 1.0f));
            TRY(gaia_brain_set_beta(p->b, area_name[x], area_name[LEX], 1.0f));
            for (y = 0; y < NAREAS; y++)
                if (fast_area[y]) TRY(gaia_brain_set_beta(p->b, area_name[y], area_name[x], x == y ? 0.05f : 0.5f));
        }
    for (x = 0; x < NAREAS; x++) {
        if (x != LEX && x != SUBJ && x != VERB) TRY(gaia_brain_inhibit_area(p->b, area_name[x], 0));
        for (y = 0; y < NAREAS; y++)
            if (x != y) TRY(gaia_brain_inhibit_fibre(p->b, area_name[x], area_name[y], 0));
    }
    return 1;
}

static int apply_rules(parser *p, const rule *r) {
    for (; r->what; r++) {
        const char *a = area_name[(int)r->a], *c = area_name[(int)r->b];
        if (r->what == 'a' && r->close) TRY(gaia_brain_inhibit_area(p->b, a, r->reason));
        if (r->what == 'a' && !r->close) TRY(gaia_brain_disinhibit_area(p->b, a, r->reason));
        /* the reference's fibres are two-way: both directions */
        if (r->what == 'f' && r->close) {
            TRY(gaia_brain_inhibit_fibre(p->b, a, c, r->reason));
            TRY(gaia_brain_inhibit_fibre(p->b, c, a, r->reason));
        }
        if (r->what == 'f' && !r->close) {
            TRY(gaia_brain_disinhibit_fibre(p->b, a, c, r->reason));
            TRY(gaia_brain_disinhibit_fibre(p->b, c, a, r->reason));
        }
    }
    return 1;
}

static int area_index(const char *name) {
    int x;
    for (x = 0; x < NAREAS; x++)
        if (strcmp(area_name[x], name) == 0) return x;
    return -1;
}

/* Before the rounds of a word: an area that fires but that LEX does not
   fire into keeps its assembly (fixed); an area LEX fires into loses its
   assembly, for the new word's to form. */
static int fix_or_clear(parser *p) {
    gaia_brain_fire f[NAREAS * NAREAS];
    int fires[NAREAS] = {0}, from_lex[NAREAS] = {0}, nlex = 0, x;
    size_t n, i;
    TRY(gaia_brain_open_fires(p->b, NULL, 0, f, NAREAS * NAREAS, &n));
    for (i = 0; i < n; i++) {
        int s = area_index(f[i].from), t = area_index(f[i].to);
        fires[s] = 1;
        if (s == LEX) {
            from_lex[t] = 1;
            nlex += t != LEX;
        }
    }
    /* the reference's check: LEX may drive one area besides itself */
    if (nlex > 1) {
        fprintf(stderr, "assembly_parser: LEX fires into %d areas at once\n", nlex);
        return 0;
    }
    for (x = 0; x < NAREAS; x++) {
        if (!fires[x]) continue;
        if (!from_lex[x]) TRY(gaia_brain_fix(p->b, area_name[x]));
        else if (x != LEX) TRY(gaia_brain_clear_winners(p->b, area_name[x]));
        if (p->verbose) printf("    %s %s\n", !from_lex[x] ? "fix  " : x != LEX ? "clear" : "keep ", area_name[x]);
    }
    if (p->verbose) {
        printf("    round 1:");
        for (i = 0; i < n; i++) printf(" %s>%s", f[i].from, f[i].to);
        printf("\n");
    }
    return 1;
}

/* The word LEX's winners hold (at least 70% of an assembly), or NULL. */
static const char *lex_word(parser *p) {
    size_t best = 0, overlap = 0;
    if (gaia_brain_read_blocks(p->b, area_name[LEX], NWORDS, &best, &overlap) != GAIA_OK) return NULL;
    if (p->verbose) printf("    LEX holds %zu of the 20 neurons of '%s'\n", overlap, lexicon[best].word);
    return overlap * 10 >= 20 * 7 ? lexicon[best].word : NULL;
}

/* One read-out step: `from` fires into each area of `to` (one step). */
static int fire_into(parser *p, int from, const int *to) {
    gaia_brain_fire f[NAREAS];
    size_t n = 0;
    int y;
    for (y = 0; y < NAREAS; y++)
        if (to[y]) {
            f[n].from = area_name[from];
            f[n].to = area_name[y];
            n++;
        }
    if (n) TRY(gaia_brain_project(p->b, f, n));
    return 1;
}

/* The read-out from `area` along the fibres in used[area][*]: this area's
   word, then each dependent's; appends "head -AREA-> word" lines and the
   subtree "word [AREA subtree] ..." to the tree text. */
static int read_out(parser *p, int area, int (*used)[NAREAS], int depth) {
    const char *head, *dep;
    int y, to[NAREAS] = {0};
    size_t len;
    if (depth > NAREAS) return 0;
    if (!fire_into(p, area, used[area])) return 0;
    head = lex_word(p);
    len = strlen(p->tree);
    snprintf(p->tree + len, sizeof p->tree - len, "%s", head ? head : "<NON-WORD>");
    for (y = 0; y < NAREAS; y++) {
        if (y == LEX || !used[area][y]) continue;
        memset(to, 0, sizeof to);
        to[LEX] = 1;
        if (!fire_into(p, y, to)) return 0;
        dep = lex_word(p);
        if (p->ndeps < 64)
            snprintf(p->deps[p->ndeps++], sizeof p->deps[0], "%s -%s-> %s", head ? head : "<NON-WORD>",
                     area_name[y], dep ? dep : "<NON-WORD>");
    }
    for (y = 0; y < NAREAS; y++) {
        if (y == LEX || !used[area][y]) continue;
        len = strlen(p->tree);
        snprintf(p->tree + len, sizeof p->tree - len, " [%s ", area_name[y]);
        if (!read_out(p, y, used, depth + 1)) return 0;
        len = strlen(p->tree);
        snprintf(p->tree + len, sizeof p->tree - len, "]");
    }
    return 1;
}

static int parse(parser *p, const char *sentence, uint64_t seed) {
    char buf[512], *w;
    int used[NAREAS][NAREAS], x, y, r;
    p->ndeps = 0;
    p->tree[0] = 0;
    if (strlen(sentence) >= sizeof buf) {
        fprintf(stderr, "assembly_parser: sentence too long\n");
        return 0;
    }
    if (!parser_brain(p, seed)) return 0;
    strcpy(buf, sentence);
    for (w = strtok(buf, " \t\n"); w; w = strtok(NULL, " \t\n")) {
        int i;
        for (i = 0; i < NWORDS && strcmp(lexicon[i].word, w) != 0; i++) {
        }
        if (i == NWORDS) {
            fprintf(stderr, "assembly_parser: '%s' is not in the lexicon\n", w);
            return 0;
        }
        if (p->verbose) printf("  %s (%s)\n", w, kinds[lexicon[i].kind].name);
        TRY(gaia_brain_activate(p->b, area_name[LEX], (uint32_t)i));
        if (!apply_rules(p, kinds[lexicon[i].kind].pre) || !fix_or_clear(p)) return 0;
        for (r = 0; r < p->rounds; r++) TRY(gaia_brain_project_open(p->b, NULL, 0, NULL));
        if (!apply_rules(p, kinds[lexicon[i].kind].post)) return 0;
    }
    /* the read-out: the fibres the parse used (and the rules allow), read
       with plasticity off, nothing fixed and nothing inhibited */
    for (x = 0; x < NAREAS; x++)
        for (y = 0; y < NAREAS; y++) {
            uint64_t fired = 0;
            TRY(gaia_brain_fibre_fires(p->b, area_name[x], area_name[y], &fired));
            used[x][y] = fired > 0 && readout[x][y];
        }
    TRY(gaia_brain_set_plasticity(p->b, 0));
    for (x = 0; x < NAREAS; x++) {
        TRY(gaia_brain_unfix(p->b, area_name[x]));
        TRY(gaia_brain_disinhibit_area(p->b, area_name[x], GAIA_BRAIN_ALL_REASONS));
        for (y = 0; y < NAREAS; y++)
            TRY(gaia_brain_disinhibit_fibre(p->b, area_name[x], area_name[y], GAIA_BRAIN_ALL_REASONS));
    }
    return read_out(p, VERB, used, 0);
}

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
    p.rounds = 20;
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
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            p.rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--sampler") == 0 && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "exact") || !strcmp(argv[i + 1], "truncnorm"))) {
            p.sampler = strcmp(argv[++i], "exact") == 0 ? GAIA_SAMPLER_EXACT : GAIA_SAMPLER_TRUNCNORM;
        } else if (strcmp(argv[i], "-v") == 0) {
            p.verbose = 1;
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
