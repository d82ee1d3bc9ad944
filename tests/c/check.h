/* CHECK for the C test programs: counts and prints a failed check, with sonic's last error,
 * and goes on; main returns failures ? 1 : 0. */
#ifndef SONIC_TEST_CHECK_H
#define SONIC_TEST_CHECK_H

#include <stdio.h>

#include "sonic.h"

static int failures = 0;

#define CHECK(condition)                                                                \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__, \
              #condition, sonic_last_error());                                          \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

#endif
