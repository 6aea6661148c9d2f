// How many tests run at once: a bound on Swift Testing's parallelism, set before it starts.
//
// Swift Testing starts every test of the process at once unless the environment says otherwise
// (`SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`). Baton's ~430 tests each start servers,
// workers, child processes and a database of their own; on a machine of two cores, all at once,
// each test's wall time became nearly the whole run's, and the tests that start first and make
// many requests ran past their two-minute time limit, while timing bounds that hold on any idle
// machine (a recovery within 5 s of a restart) failed for want of CPU. Measured on this
// machine, same build, one run each (`BATON_REQUIRE_BROWSER=1 swift test --skip-build`):
// unbounded, 130.8 s with 4 failures (two time limits, a recovery after 7.3 s, a stage re-sent
// after a lost lease); with a width of 16, 124.9 s and none.
//
// `swift test` is the whole set-up (README), so the bound cannot be left to the caller's
// environment: this constructor, linked into every test binary through BatonTestSupport, sets it
// before `main` runs, unless the caller set it (theirs wins). Eight tests per core: most of a
// test's time is spent waiting on PostgreSQL, HTTP and processes, not on its own CPU.
#include "BatonTestParallelism.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *const variable = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH";

static int default_width(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores * 8 : 16;
}

__attribute__((constructor)) static void bound_test_parallelism(void) {
    char value[16];
    snprintf(value, sizeof value, "%d", default_width());
    setenv(variable, value, 0);
}

int baton_test_parallelism_width(void) {
    const char *set = getenv(variable);
    return set != NULL ? atoi(set) : default_width();
}
