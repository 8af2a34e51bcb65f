
/*
 * The unit tests' checks: each prints "ok N - what" or "not ok N - what"
 * (TAP), and unit_done() prints the plan and returns the exit status.
 */


#ifndef _UNIT_H_INCLUDED_
#define _UNIT_H_INCLUDED_


#include <stdio.h>
#include <string.h>


static int  unit_run, unit_failed;


#define UNIT_CHECK(cond, what)                                                \
    do {                                                                      \
        unit_run++;                                                           \
        if (cond) {                                                           \
            printf("ok %d - %s\n", unit_run, what);                           \
        } else {                                                              \
            unit_failed++;                                                    \
            printf("not ok %d - %s (%s:%d)\n", unit_run, what, __FILE__,      \
                   __LINE__);                                                 \
        }                                                                     \
    } while (0)

/* a string of known length against a C string */
#define UNIT_STR_EQ(data, len, str)                                           \
    ((len) == strlen(str) && memcmp((data), (str), (len)) == 0)


static int
unit_done(const char *name)
{
    printf("1..%d\n", unit_run);
    fprintf(stderr, "%s: %d passed, %d failed\n", name,
            unit_run - unit_failed, unit_failed);

    return unit_failed != 0;
}


#endif /* _UNIT_H_INCLUDED_ */
