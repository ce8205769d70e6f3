/*
 * dynlib.c — loading a client library on first use (dynlib.h).
 */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* dlopen the first soname that loads, then resolve every name into api (in order). */
static void load(kp_dynlib *lib, const char *const *names, size_t count, void *api)
{
    const char *why = "not found";
    for (const char *const *so = lib->sonames; *so && !lib->handle; so++) {
        lib->handle = dlopen(*so, RTLD_NOW | RTLD_LOCAL);
        if (!lib->handle) why = dlerror();
    }
    if (!lib->handle) {
        snprintf(lib->failure, sizeof lib->failure, "%s need %s, which could not be loaded (%s); install it "
                 "(Debian/Ubuntu: apt-get install %s)", lib->needed_for, lib->sonames[0], why ? why : "not found", lib->package);
        lib->state = -1;
        return;
    }
    for (size_t i = 0; i < count; i++) {
        void *sym = dlsym(lib->handle, names[i]);
        if (!sym) {
            snprintf(lib->failure, sizeof lib->failure, "%s need %s from %s, which this version lacks; install a newer %s",
                     lib->needed_for, names[i], lib->sonames[0], lib->package);
            lib->state = -1;
            return;
        }
        memcpy((char *)api + i * sizeof sym, &sym, sizeof sym);   /* POSIX: a function's address as a void * */
    }
    lib->state = 1;
}

int kp_dynlib_load_into(kp_dynlib *lib, const char *const *names, size_t count, void *api, size_t api_size, kp_error *err)
{
    /* a function pointer is a data pointer's size on every platform keyplan builds for */
    if (api_size != count * sizeof(void *) || sizeof(void *) != sizeof(void (*)(void)))
        return kp_error_set(err, KP_ERR_INTERNAL, NULL, 0, 0, "%s: %zu functions do not fit the loader", lib->sonames[0], count);
    pthread_mutex_lock(&lock);
    if (lib->state == 0) load(lib, names, count, api);
    int state = lib->state;
    pthread_mutex_unlock(&lock);
    if (state == 1) return 0;
    return kp_error_set(err, KP_ERR_TARGET, NULL, 0, 0, "%s", lib->failure);
}
