/* The rule machinery of the assembly parsers (examples/assembly_parser.c
   and examples/assembly_recursive_parser.c): the parser of Mitropolsky,
   Collins and Papadimitriou ("A biologically plausible parser", 2021) and
   its recursive variant, on a gaia brain. Included by one example each; it
   holds static functions only.

   The brain has an explicit lexicon area LEX (one assembly of k neurons per
   word: word i is neurons [i*k, (i+1)*k)) and lazy syntactic areas (SUBJ,
   OBJ, VERB, DET, ADJ, ADVERB, PREP, PREP_P, and for the recursive parser
   DEPCLAUSE). Every fibre between two areas starts closed, and of the areas
   only LEX, SUBJ and VERB are open. Each word of the sentence
     1. fires its lexicon assembly (fixed),
     2. applies its kind's "pre" rules: open (or close) fibres and areas,
        each for a numbered reason (a fibre stays closed while any reason
        holds it),
     3. fixes the assembly of every area that fires and that LEX does not
        fire into, and clears the areas that LEX fires into (a new word
        takes them over),
     4. runs the project rounds along the open fibres (gaia_brain_project_open),
     5. applies its "post" rules.
   The recursive parser reads "NOUN that ... ," as a dependent clause of the
   noun (recursive_step and clause_end below).
   Then the read-out, with plasticity off and nothing fixed: from VERB,
   along every fibre the parse used (gaia_brain_fibre_fires) that the
   read-out rules allow, project into the dependent area, then from that
   area into LEX, and read the word there (gaia_brain_read_blocks, at least
   70% of k). That gives the dependencies "head -AREA-> dependent", and a
   tree, recursively. */
#ifndef GAIA_EXAMPLES_ASSEMBLY_RULES_H
#define GAIA_EXAMPLES_ASSEMBLY_RULES_H
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

/* ---- areas ---- */
enum { LEX, DET, SUBJ, OBJ, VERB, ADJ, ADVERB, PREP, PREP_P, DEP_CLAUSE, NAREAS };
static const char *const area_name[NAREAS] = {"LEX",    "DET",  "SUBJ", "OBJ",    "VERB",
                                              "ADJ",    "ADVERB", "PREP", "PREP_P", "DEPCLAUSE"};
/* The areas whose mutual fibres learn fast (the reference's "recurrent"
   areas; DET is not one of them). */
static const int fast_area[NAREAS] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

/* ---- rules ----
   A rule opens or closes a two-way fibre (both directions) or an area, for
   a reason. A word kind has rules before its project rounds and after.
   Rules that name DEPCLAUSE are skipped by the plain parser, whose brain
   lacks that area (its reference has neither the area nor those rules). */
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
     {OPEN_F(LEX, VERB, 0), OPEN_F(VERB, SUBJ, 0), OPEN_F(VERB, ADVERB, 0), OPEN_F(VERB, DEP_CLAUSE, 0),
      OPEN_A(ADVERB, 1), END},
     {CLOSE_F(LEX, VERB, 0), OPEN_A(OBJ, 0), CLOSE_A(SUBJ, 0), CLOSE_A(ADVERB, 0), OPEN_F(PREP_P, VERB, 0),
      CLOSE_F(VERB, DEP_CLAUSE, 0), END}},
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

/* Which fibres the read-out follows out of each area (into LEX: the word;
   into DEPCLAUSE: the dependent clause's verb and its subject). */
static const int readout[NAREAS][NAREAS] = {
    /* LEX */ {0},
    /* DET */ {[LEX] = 1},
    /* SUBJ */ {[LEX] = 1, [DET] = 1, [ADJ] = 1, [PREP_P] = 1, [DEP_CLAUSE] = 1},
    /* OBJ */ {[LEX] = 1, [DET] = 1, [ADJ] = 1, [PREP_P] = 1, [DEP_CLAUSE] = 1},
    /* VERB */ {[LEX] = 1, [SUBJ] = 1, [OBJ] = 1, [PREP_P] = 1, [ADVERB] = 1, [ADJ] = 1},
    /* ADJ */ {[LEX] = 1},
    /* ADVERB */ {[LEX] = 1},
    /* PREP */ {[LEX] = 1},
    /* PREP_P */ {[LEX] = 1, [PREP] = 1, [ADJ] = 1, [DET] = 1},
    /* DEPCLAUSE */ {0},
};

/* ---- the brain ---- */
typedef struct parser {
    gaia_ctx *ctx;
    gaia_brain *b;
    const char *prog; /* the example's name, for messages */
    int rounds, verbose;
    int nareas;        /* NAREAS - 1 for the plain parser (no DEPCLAUSE), NAREAS for the recursive one */
    size_t lazy_n;     /* the lazy areas' n and k (DET: k = 20, the lexicon's) */
    uint32_t lazy_k;
    gaia_sampler sampler; /* the lazy areas' (gaia_brain_set_sampler) */
    /* the read-out: dependencies and a tree in text */
    char deps[64][96];
    int ndeps;
    char tree[1024];
} parser;

/* The options both parsers take: --rounds N, --sampler exact|truncnorm,
   -v. Returns 1 when argv[*i] (and its value, *i moved past it) was one of
   them, 0 otherwise. */
static int parser_option(parser *p, int argc, char **argv, int *i) {
    if (strcmp(argv[*i], "--rounds") == 0 && *i + 1 < argc && atoi(argv[*i + 1]) > 0) {
        p->rounds = atoi(argv[++*i]);
    } else if (strcmp(argv[*i], "--sampler") == 0 && *i + 1 < argc &&
               (!strcmp(argv[*i + 1], "exact") || !strcmp(argv[*i + 1], "truncnorm"))) {
        p->sampler = strcmp(argv[++*i], "exact") == 0 ? GAIA_SAMPLER_EXACT : GAIA_SAMPLER_TRUNCNORM;
    } else if (strcmp(argv[*i], "-v") == 0) {
        p->verbose = 1;
    } else {
        return 0;
    }
    return 1;
}

#define TRY(call)                                                                       \
    do {                                                                                \
        if ((call) != GAIA_OK) {                                                        \
            fprintf(stderr, "%s: %s: %s\n", p->prog, #call, gaia_last_error(p->ctx));   \
            return 0;                                                                   \
        }                                                                               \
    } while (0)

/* The reference parser's brain: p = 0.1; LEX explicit, 20 words of k = 20;
   the others lazy (the parser: n = 10^4, k = 100; the recursive parser:
   n = 10^5, k = 50; DET: k = 20); beta 0.2, except 1.0 between LEX and the
   fast areas, 0.05 for their recurrence and 0.5 between two of them.
   Everything closed for reason 0 but the areas LEX, SUBJ and VERB; self
   fibres stay open (an area's recurrence comes with being engaged by an
   open fibre: gaia_brain_project_open). */
static int parser_brain(parser *p, uint64_t seed) {
    int x, y, na = p->nareas;
    TRY(gaia_brain_create(p->ctx, 0.1, seed, GAIA_DEVICE_AUTO, &p->b));
    TRY(gaia_brain_set_sampler(p->b, p->sampler));
    TRY(gaia_brain_add_area(p->b, area_name[LEX], NWORDS * 20, 20, 0.2f, GAIA_AREA_EXPLICIT));
    for (x = 1; x < na; x++)
        TRY(gaia_brain_add_area(p->b, area_name[x], p->lazy_n, x == DET ? 20 : p->lazy_k, 0.2f, GAIA_AREA_LAZY));
    for (x = 0; x < na; x++)
        if (fast_area[x]) {
            TRY(gaia_brain_set_beta(p->b, area_name[LEX], area_name[x], 1.0f));
            TRY(gaia_brain_set_beta(p->b, area_name[x], area_name[LEX], 1.0f));
            for (y = 0; y < na; y++)
                if (fast_area[y]) TRY(gaia_brain_set_beta(p->b, area_name[y], area_name[x], x == y ? 0.05f : 0.5f));
        }
    for (x = 0; x < na; x++) {
        if (x != LEX && x != SUBJ && x != VERB) TRY(gaia_brain_inhibit_area(p->b, area_name[x], 0));
        for (y = 0; y < na; y++)
            if (x != y) TRY(gaia_brain_inhibit_fibre(p->b, area_name[x], area_name[y], 0));
    }
    return 1;
}

static int area_inhibit(parser *p, int x, int close, unsigned reason) {
    if (close) TRY(gaia_brain_inhibit_area(p->b, area_name[x], reason));
    else TRY(gaia_brain_disinhibit_area(p->b, area_name[x], reason));
    return 1;
}

/* A two-way fibre (the reference's fibres are): both directions. */
static int fibre_inhibit(parser *p, int x, int y, int close, unsigned reason) {
    if (close) {
        TRY(gaia_brain_inhibit_fibre(p->b, area_name[x], area_name[y], reason));
        TRY(gaia_brain_inhibit_fibre(p->b, area_name[y], area_name[x], reason));
    } else {
        TRY(gaia_brain_disinhibit_fibre(p->b, area_name[x], area_name[y], reason));
        TRY(gaia_brain_disinhibit_fibre(p->b, area_name[y], area_name[x], reason));
    }
    return 1;
}

static int apply_rules(parser *p, const rule *r) {
    for (; r->what; r++) {
        if (r->a >= p->nareas || (r->what == 'f' && r->b >= p->nareas)) continue; /* DEPCLAUSE, plain parser */
        if (r->what == 'a' && !area_inhibit(p, r->a, r->close, r->reason)) return 0;
        if (r->what == 'f' && !fibre_inhibit(p, r->a, r->b, r->close, r->reason)) return 0;
    }
    return 1;
}

static int area_index(const char *name) {
    int x;
    for (x = 0; x < NAREAS; x++)
        if (strcmp(area_name[x], name) == 0) return x;
    return -1;
}

/* The fires of the next project_open step (f, *n): fires[x] when area x
   fires, from_lex[x] when LEX fires into x. */
static int next_fires(parser *p, gaia_brain_fire *f, size_t *n, int *fires, int *from_lex) {
    size_t i;
    TRY(gaia_brain_open_fires(p->b, NULL, 0, f, NAREAS * NAREAS, n));
    memset(fires, 0, NAREAS * sizeof *fires);
    memset(from_lex, 0, NAREAS * sizeof *from_lex);
    for (i = 0; i < *n; i++) {
        int s = area_index(f[i].from), t = area_index(f[i].to);
        fires[s] = 1;
        if (s == LEX) from_lex[t] = 1;
    }
    return 1;
}

static void print_fires(const parser *p, const gaia_brain_fire *f, size_t n) {
    size_t i;
    if (!p->verbose) return;
    printf("    round 1:");
    for (i = 0; i < n; i++) printf(" %s>%s", f[i].from, f[i].to);
    printf("\n");
}

/* Before the rounds of a word: an area that fires but that LEX does not
   fire into keeps its assembly (fixed); an area LEX fires into loses its
   assembly, for the new word's to form. */
static int fix_or_clear(parser *p) {
    gaia_brain_fire f[NAREAS * NAREAS];
    size_t n;
    int fires[NAREAS], from_lex[NAREAS], nlex = 0, x;
    if (!next_fires(p, f, &n, fires, from_lex)) return 0;
    for (x = 1; x < NAREAS; x++) nlex += from_lex[x];
    /* the reference's check: LEX may drive one area besides itself */
    if (nlex > 1) {
        fprintf(stderr, "%s: LEX fires into %d areas at once\n", p->prog, nlex);
        return 0;
    }
    for (x = 0; x < p->nareas; x++) {
        if (!fires[x]) continue;
        if (!from_lex[x]) TRY(gaia_brain_fix(p->b, area_name[x]));
        else if (x != LEX) TRY(gaia_brain_clear_winners(p->b, area_name[x]));
        if (p->verbose) printf("    %s %s\n", !from_lex[x] ? "fix  " : x != LEX ? "clear" : "keep ", area_name[x]);
    }
    print_fires(p, f, n);
    return 1;
}

/* The word LEX's winners hold (at least 70% of an assembly), or NULL. */
static const char *lex_word(parser *p) {
    size_t best = 0, overlap = 0;
    if (gaia_brain_read_blocks(p->b, area_name[LEX], NWORDS, &best, &overlap) != GAIA_OK) return NULL;
    if (p->verbose) printf("    LEX holds %zu of the 20 neurons of '%s'\n", overlap, lexicon[best].word);
    return overlap * 10 >= 20 * 7 ? lexicon[best].word : NULL;
}
#define WORD_OR_NON(w) ((w) ? (w) : "<NON-WORD>")

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

static int fire_one(parser *p, int from, int to) {
    int t[NAREAS] = {0};
    t[to] = 1;
    return fire_into(p, from, t);
}

static void add_dep(parser *p, const char *head, const char *label, const char *dep) {
    if (p->ndeps < 64)
        snprintf(p->deps[p->ndeps++], sizeof p->deps[0], "%s -%s-> %s", WORD_OR_NON(head), label, WORD_OR_NON(dep));
}

static void tree_add(parser *p, const char *text) {
    size_t len = strlen(p->tree);
    snprintf(p->tree + len, sizeof p->tree - len, "%s", text);
}

/* The read-out from `area` along the fibres in used[area][*]: this area's
   word, then each dependent's; appends "head -AREA-> word" lines and the
   subtree "word [AREA subtree] ..." to the tree text. A dependent clause
   (the fibre into DEPCLAUSE, the recursive parser's) reads as the
   reference does: DEPCLAUSE fires into VERB, VERB into LEX and SUBJ (the
   clause's verb), SUBJ into LEX (its subject): "head -DEP-VERB-> verb",
   "verb -SUBJ-> subject". */
static int read_out(parser *p, int area, int (*used)[NAREAS], int depth) {
    const char *head, *dep, *clause_verb = NULL, *clause_subj = NULL;
    int y;
    if (depth > NAREAS) return 0;
    if (!fire_into(p, area, used[area])) return 0;
    head = lex_word(p);
    tree_add(p, WORD_OR_NON(head));
    for (y = 0; y < NAREAS; y++) {
        if (y == LEX || !used[area][y]) continue;
        if (y == DEP_CLAUSE) {
            int to[NAREAS] = {0};
            to[LEX] = to[SUBJ] = 1;
            if (!fire_one(p, DEP_CLAUSE, VERB) || !fire_into(p, VERB, to)) return 0;
            clause_verb = lex_word(p);
            add_dep(p, head, "DEP-VERB", clause_verb);
            if (!fire_one(p, SUBJ, LEX)) return 0;
            clause_subj = lex_word(p);
            add_dep(p, clause_verb, "SUBJ", clause_subj);
            continue;
        }
        if (!fire_one(p, y, LEX)) return 0;
        dep = lex_word(p);
        add_dep(p, head, area_name[y], dep);
    }
    for (y = 0; y < NAREAS; y++) {
        char text[128];
        if (y == LEX || !used[area][y]) continue;
        if (y == DEP_CLAUSE) {
            snprintf(text, sizeof text, " [%s %s [SUBJ %s]]", area_name[y], WORD_OR_NON(clause_verb),
                     WORD_OR_NON(clause_subj));
            tree_add(p, text);
            continue;
        }
        snprintf(text, sizeof text, " [%s ", area_name[y]);
        tree_add(p, text);
        if (!read_out(p, y, used, depth + 1)) return 0;
        tree_add(p, "]");
    }
    return 1;
}

/* The reference's initialize_states: every fibre between two areas closed
   for reason 0 alone (other reasons lifted), every area closed for reason 0
   besides the reasons it has, then LEX, SUBJ and VERB opened for reason 0. */
static int reset_states(parser *p) {
    int x, y;
    for (x = 0; x < p->nareas; x++) {
        if (!area_inhibit(p, x, 1, 0)) return 0;
        for (y = 0; y < p->nareas; y++)
            if (x != y) {
                TRY(gaia_brain_disinhibit_fibre(p->b, area_name[x], area_name[y], GAIA_BRAIN_ALL_REASONS));
                TRY(gaia_brain_inhibit_fibre(p->b, area_name[x], area_name[y], 0));
            }
    }
    return area_inhibit(p, LEX, 0, 0) && area_inhibit(p, SUBJ, 0, 0) && area_inhibit(p, VERB, 0, 0);
}

/* The start of a dependent clause (the word before "that"): DEPCLAUSE and
   its fibres from SUBJ and OBJ open, LEX and VERB closed; every other area
   that fires keeps its assembly while DEPCLAUSE forms one over the rounds;
   then the states are reset, DEPCLAUSE staying open. */
static int clause_start(parser *p) {
    gaia_brain_fire f[NAREAS * NAREAS];
    size_t n;
    int fires[NAREAS], from_lex[NAREAS], x, r;
    if (!area_inhibit(p, DEP_CLAUSE, 0, 0) || !fibre_inhibit(p, SUBJ, DEP_CLAUSE, 0, 0) ||
        !fibre_inhibit(p, OBJ, DEP_CLAUSE, 0, 0) || !area_inhibit(p, LEX, 1, 0) || !area_inhibit(p, VERB, 1, 0))
        return 0;
    if (!next_fires(p, f, &n, fires, from_lex)) return 0;
    print_fires(p, f, n);
    for (x = 0; x < p->nareas; x++)
        if (fires[x] && x != DEP_CLAUSE) TRY(gaia_brain_fix(p->b, area_name[x]));
    TRY(gaia_brain_unfix(p->b, area_name[DEP_CLAUSE]));
    for (r = 0; r < p->rounds; r++) TRY(gaia_brain_project_open(p->b, NULL, 0, NULL));
    return reset_states(p) && area_inhibit(p, DEP_CLAUSE, 0, 0);
}

static int word_index(parser *p, const char *w) {
    int i;
    for (i = 0; i < NWORDS && strcmp(lexicon[i].word, w) != 0; i++) {
    }
    if (i == NWORDS) fprintf(stderr, "%s: '%s' is not in the lexicon\n", p->prog, w);
    return i < NWORDS ? i : -1;
}

/* The end of a dependent clause (the word before ","): the states reset,
   and the words before the clause's "that" are read again, each with its
   rules and one project step without plasticity, to bring the main
   clause's assemblies back; then DEPCLAUSE closes. */
static int clause_end(parser *p, char **words, int outer_end) {
    int j;
    if (!reset_states(p)) return 0;
    TRY(gaia_brain_set_plasticity(p->b, 0));
    for (j = 0; j < outer_end; j++) {
        int i = word_index(p, words[j]);
        if (i < 0) return 0;
        if (p->verbose) printf("  %s again (%s)\n", words[j], kinds[lexicon[i].kind].name);
        TRY(gaia_brain_activate(p->b, area_name[LEX], (uint32_t)i));
        if (!apply_rules(p, kinds[lexicon[i].kind].pre) || !fix_or_clear(p)) return 0;
        TRY(gaia_brain_project_open(p->b, NULL, 0, NULL));
        if (!apply_rules(p, kinds[lexicon[i].kind].post)) return 0;
    }
    TRY(gaia_brain_set_plasticity(p->b, 1));
    return area_inhibit(p, DEP_CLAUSE, 1, 0);
}

/* Parses a sentence into p->deps and p->tree with a new brain of the seed
   (p->b; the caller destroys it). The recursive parser (p->nareas ==
   NAREAS) takes "NOUN that ... ," as a dependent clause, as its reference
   does: at the word before "that" the clause starts (instead of that
   word's post rules), "that" is skipped; at the word before "," the clause
   ends (again instead of the post rules), "," is skipped. */
static int parse(parser *p, const char *sentence, uint64_t seed) {
    char buf[512], *words[64], *w;
    int used[NAREAS][NAREAS], x, y, r, nw = 0, at, that_at = -1;
    p->ndeps = 0;
    p->tree[0] = 0;
    if (strlen(sentence) >= sizeof buf) {
        fprintf(stderr, "%s: sentence too long\n", p->prog);
        return 0;
    }
    strcpy(buf, sentence);
    for (w = strtok(buf, " \t\n"); w; w = strtok(NULL, " \t\n")) {
        if (nw == 64) {
            fprintf(stderr, "%s: sentence too long\n", p->prog);
            return 0;
        }
        words[nw++] = w;
    }
    if (!parser_brain(p, seed)) return 0;
    for (at = 0; at < nw; at++) {
        int i = word_index(p, words[at]);
        const char *next = at + 1 < nw ? words[at + 1] : "";
        if (i < 0) return 0;
        if (p->verbose) printf("  %s (%s)\n", words[at], kinds[lexicon[i].kind].name);
        TRY(gaia_brain_activate(p->b, area_name[LEX], (uint32_t)i));
        if (!apply_rules(p, kinds[lexicon[i].kind].pre) || !fix_or_clear(p)) return 0;
        for (r = 0; r < p->rounds; r++) TRY(gaia_brain_project_open(p->b, NULL, 0, NULL));
        if (p->nareas == NAREAS && strcmp(next, "that") == 0) {
            if (p->verbose) printf("  that: a dependent clause starts\n");
            if (!clause_start(p)) return 0;
            that_at = ++at;
        } else if (p->nareas == NAREAS && strcmp(next, ",") == 0) {
            if (that_at < 0) {
                fprintf(stderr, "%s: ',' ends no dependent clause\n", p->prog);
                return 0;
            }
            if (p->verbose) printf("  ,: the dependent clause ends\n");
            if (!clause_end(p, words, that_at)) return 0;
            that_at = -1;
            ++at;
        } else if (!apply_rules(p, kinds[lexicon[i].kind].post))
            return 0;
    }
    /* the read-out: the fibres the parse used (and the rules allow), read
       with plasticity off, nothing fixed and nothing inhibited */
    memset(used, 0, sizeof used);
    for (x = 0; x < p->nareas; x++)
        for (y = 0; y < p->nareas; y++) {
            uint64_t fired = 0;
            TRY(gaia_brain_fibre_fires(p->b, area_name[x], area_name[y], &fired));
            used[x][y] = fired > 0 && readout[x][y];
        }
    TRY(gaia_brain_set_plasticity(p->b, 0));
    for (x = 0; x < p->nareas; x++) {
        TRY(gaia_brain_unfix(p->b, area_name[x]));
        TRY(gaia_brain_disinhibit_area(p->b, area_name[x], GAIA_BRAIN_ALL_REASONS));
        for (y = 0; y < p->nareas; y++)
            TRY(gaia_brain_disinhibit_fibre(p->b, area_name[x], area_name[y], GAIA_BRAIN_ALL_REASONS));
    }
    return read_out(p, VERB, used, 0);
}
#endif
