#ifndef BATON_TEST_PARALLELISM_H
#define BATON_TEST_PARALLELISM_H

/// How many tests Swift Testing runs at once in this process (see parallelism.c).
int baton_test_parallelism_width(void);

#endif
