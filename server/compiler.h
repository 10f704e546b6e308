/*
 * compiler.h - the one compiler attribute notesd uses, defined once.
 *
 * NOTESD_MUSTCHECK marks functions whose result says whether they worked (pool,
 * parse and config functions): ignoring it is a warning, and with the strict
 * build's -Werror, an error.
 */
#ifndef NOTESD_COMPILER_H
#define NOTESD_COMPILER_H

#define NOTESD_MUSTCHECK __attribute__((warn_unused_result))

#endif
