/* CHECK(call) for the examples: a gaia call that fails prints where, its
   status and the context's message (which names the function and the
   values), and ends the program. It expects the context in a variable
   named ctx. */
#ifndef GAIA_EXAMPLE_CHECK_H
#define GAIA_EXAMPLE_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        gaia_status st_ = (call);                                                                              \
        if (st_ != GAIA_OK) {                                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, gaia_status_str(st_), gaia_last_error(ctx)); \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)
#endif
