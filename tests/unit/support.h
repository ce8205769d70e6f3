/*
 * support.h — small helpers shared by the unit tests: reading fixture files, running
 * the keyplan binary and capturing its output.
 */
#ifndef KP_TEST_SUPPORT_H
#define KP_TEST_SUPPORT_H

#include <stddef.h>

/* Reads a whole file (relative paths are taken from the source tree). Returns a
 * NUL-terminated malloc'd buffer, or NULL. */
char *kp_test_read_file(const char *path, size_t *len);

/* Runs `keyplan` (the built binary) with the given shell-quoted argument string,
 * capturing stdout and stderr together. Returns the exit status; *output is malloc'd. */
int kp_test_run(const char *args, char **output);

#endif
