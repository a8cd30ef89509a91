/* timer_order.c - gaia's clock is a wall clock whatever the include order.
 *
 * Built the way a user most often builds one file - `cc -std=c99 my.c -lm`,
 * no POSIX feature macro, no OpenMP - with a system header included before
 * gaia.h, which hides POSIX's clock_gettime. The program sleeps 0.3 s in a
 * child process (system() is standard C; the sleeping costs this process no
 * CPU time) and checks that gaia_time_s and GAIA_NOW_NS saw the 0.3 s. A
 * clock() fallback, which counts CPU time, would see about 0.
 * `make test` builds and runs it before the test runner.
 */
#include <stdio.h>
#include <stdlib.h>

#define GAIA_IMPLEMENTATION
#include "gaia.h"

int main(void) {
    double t0 = gaia_time_s(), dt;
    uint64_t n0 = GAIA_NOW_NS(), dn;
    if (system("sleep 0.3") != 0) {
        printf("timer_order: skipped (no `sleep` command to wait on)\n");
        return 0;
    }
    dt = gaia_time_s() - t0;
    dn = GAIA_NOW_NS() - n0;
    if (dt < 0.25 || dt > 5.0 || dn < 250000000u) {
        printf("timer_order: FAILED: a 0.3 s sleep measured %.3f s (GAIA_NOW_NS: %.3f s); "
               "the clock is not a wall clock\n", dt, (double)dn * 1e-9);
        return 1;
    }
    printf("timer_order: a 0.3 s sleep measured %.3f s with -std=c99 and <stdio.h> before gaia.h\n", dt);
    return 0;
}
