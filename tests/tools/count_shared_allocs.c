/*
 * count_shared_allocs.c - an LD_PRELOAD library that counts calls of h2o's
 * h2o_mem_alloc_shared (the allocation notesd's request context is made with)
 * and of malloc, and writes both to the file named by COUNT_ALLOCS_OUT when
 * the process exits. Two runs that differ only in the number of requests give
 * the allocations per request. Used by tests/integration/test_allocs.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long shared_calls, malloc_calls;
static void *(*real_alloc_shared)(void *, size_t, void (*)(void *));

void *h2o_mem_alloc_shared(void *pool, size_t sz, void (*dispose)(void *))
{
    if (real_alloc_shared == NULL)
        real_alloc_shared = dlsym(RTLD_NEXT, "h2o_mem_alloc_shared");
    __atomic_add_fetch(&shared_calls, 1, __ATOMIC_RELAXED);
    return real_alloc_shared(pool, sz, dispose);
}

extern void *__libc_malloc(size_t size);

void *malloc(size_t size)
{
    __atomic_add_fetch(&malloc_calls, 1, __ATOMIC_RELAXED);
    return __libc_malloc(size);
}

/* Writes "<h2o_mem_alloc_shared calls> <malloc calls>" to $COUNT_ALLOCS_OUT at exit. */
__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("COUNT_ALLOCS_OUT");
    FILE *f = path != NULL ? fopen(path, "w") : NULL;
    if (f == NULL)
        return;
    fprintf(f, "%lu %lu\n", __atomic_load_n(&shared_calls, __ATOMIC_RELAXED),
            __atomic_load_n(&malloc_calls, __ATOMIC_RELAXED));
    fclose(f);
}
