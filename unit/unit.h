
/*
 * The unit tests' checks: each CHECK counts a pass or a failure, a
 * failure prints "not ok N - name" with the file, line and what was
 * expected; MCP_UNIT_VERBOSE=1 prints the passes too.  ngx_unit_done()
 * prints "<test>: N passed, M failed" and gives the exit status.
 *
 * The tests link the module's pure files with fuzz/ngx_shim.c, the
 * fuzz targets' stand-in for nginx's core: see scripts/unit.
 */


#ifndef _NGX_UNIT_H_INCLUDED_
#define _NGX_UNIT_H_INCLUDED_


#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define CHECK(cond, name)                                                    \
    ngx_unit_check((cond) != 0, name, __FILE__, __LINE__, #cond)

#define CHECK_INT(got, want, name)                                           \
    ngx_unit_check_int((long long) (got), (long long) (want), name,          \
                       __FILE__, __LINE__)

/* got may be NULL; a NULL want expects NULL */
#define CHECK_STR(got, want, name)                                           \
    ngx_unit_check_str((const char *) (got), want, name, __FILE__, __LINE__)

/* got: len bytes, not NUL-terminated */
#define CHECK_MEM(got, len, want, name)                                      \
    ngx_unit_check_mem((const char *) (got), len, want, name,                \
                       __FILE__, __LINE__)


static unsigned  ngx_unit_passed;
static unsigned  ngx_unit_failed;


static inline int
ngx_unit_verbose(void)
{
    const char  *v;

    v = getenv("MCP_UNIT_VERBOSE");

    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}


static inline int
ngx_unit_check(int ok, const char *name, const char *file, int line,
    const char *expr)
{
    unsigned  n;

    n = ngx_unit_passed + ngx_unit_failed + 1;

    if (ok) {
        ngx_unit_passed++;

        if (ngx_unit_verbose()) {
            printf("ok %u - %s\n", n, name);
        }

        return 1;
    }

    ngx_unit_failed++;

    printf("not ok %u - %s\n#   at %s:%d", n, name, file, line);

    if (expr != NULL) {
        printf(": %s", expr);
    }

    printf("\n");

    return 0;
}


/* equal strings, or both NULL */

static inline int
ngx_unit_streq(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }

    return strcmp(a, b) == 0;
}


static inline int
ngx_unit_check_int(long long got, long long want, const char *name,
    const char *file, int line)
{
    if (ngx_unit_check(got == want, name, file, line, NULL)) {
        return 1;
    }

    printf("#   got %lld, want %lld\n", got, want);

    return 0;
}


static inline int
ngx_unit_check_mem(const char *got, size_t len, const char *want,
    const char *name, const char *file, int line)
{
    int  ok;

    if (got == NULL || want == NULL) {
        ok = (got == NULL && want == NULL);

    } else {
        ok = (len == strlen(want) && memcmp(got, want, len) == 0);
    }

    if (ngx_unit_check(ok, name, file, line, NULL)) {
        return 1;
    }

    if (got == NULL) {
        printf("#   got NULL");

    } else {
        printf("#   got \"%.*s\"", (int) len, got);
    }

    if (want == NULL) {
        printf(", want NULL\n");

    } else {
        printf(", want \"%s\"\n", want);
    }

    return 0;
}


static inline int
ngx_unit_check_str(const char *got, const char *want, const char *name,
    const char *file, int line)
{
    return ngx_unit_check_mem(got, got ? strlen(got) : 0, want, name, file,
                              line);
}


static inline int
ngx_unit_done(const char *test)
{
    printf("%s: %u passed, %u failed\n", test, ngx_unit_passed,
           ngx_unit_failed);

    return (ngx_unit_failed || ngx_unit_passed == 0) ? 1 : 0;
}


/*
 * main() of a test that needs nothing but a pool: the test's own
 * "static ngx_pool_t *pool" (fuzz/ngx_shim.h's), made before the tests
 * run, in the order given, and destroyed after them; then the report of
 * ngx_unit_done(test).
 *
 *     NGX_UNIT_MAIN("test_name", test_one, test_two)
 */

#define NGX_UNIT_MAIN(test, ...)                                             \
int                                                                          \
main(void)                                                                   \
{                                                                            \
    size_t   i;                                                              \
    void   (*tests[])(void) = { __VA_ARGS__ };                               \
                                                                             \
    pool = ngx_shim_pool_create();                                           \
    if (pool == NULL) {                                                      \
        return 2;                                                            \
    }                                                                        \
                                                                             \
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {                 \
        tests[i]();                                                          \
    }                                                                        \
                                                                             \
    ngx_shim_pool_destroy(pool);                                             \
                                                                             \
    return ngx_unit_done(test);                                              \
}


#endif /* _NGX_UNIT_H_INCLUDED_ */
