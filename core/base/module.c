/* Loading modules (see module.h), as Open MPI loads its components and UCX
 * its transports.
 *
 * Where they are: DISTLAB_MODULE_DIR when set; else, for a binary inside
 * the build tree (the tests, or build/cli/distlab run by hand), the build's
 * core/modules; else the installed <libdir>/distlab. The choice is made from
 * where the running executable is, so an installed distlab never loads a
 * build tree's modules, nor a build's distlab the installed ones.
 *
 * A module's undefined symbols are core's, resolved against the executable
 * that loads it: every executable linking core exports its symbols
 * (core/meson.build). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/module.h"
#include "dl_config.h"

#define MAX_MODULES 4

typedef struct {
    char name[16];
    void *handle; /* NULL: failed, why says so */
    char why[512];
} module_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static module_t modules[MAX_MODULES];
static int n_modules;

static bool inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

const char *dl__module_dir(void)
{
    const char *env = getenv("DISTLAB_MODULE_DIR");
    if (env != NULL && env[0] != '\0')
        return env;
    /* /proc/self/exe has its links resolved; so must the build root. */
    char exe[PATH_MAX], root[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (realpath(DL_BUILD_ROOT, root) == NULL)
        snprintf(root, sizeof(root), "%s", DL_BUILD_ROOT);
    return inside(exe, root) ? DL_BUILD_MODULE_DIR : DL_MODULE_DIR;
}

/* Loads name, or finds it loaded (or failed) before. Under lock. */
static module_t *load(const char *name)
{
    for (int i = 0; i < n_modules; i++)
        if (strcmp(modules[i].name, name) == 0)
            return &modules[i];
    if (n_modules == MAX_MODULES)
        return NULL;
    module_t *m = &modules[n_modules++];
    snprintf(m->name, sizeof(m->name), "%s", name);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s.so", dl__module_dir(), name);
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (m->handle == NULL) {
        /* dlerror's text starts with the path; one line, whatever it says. */
        snprintf(m->why, sizeof(m->why), "the %s module cannot be loaded: %s", name, dlerror());
        for (char *c = m->why; *c != '\0'; c++)
            if (*c == '\n')
                *c = ' ';
    }
    return m;
}

void *dl__module_symbol(const char *name, const char *symbol, char *why, size_t cap)
{
    pthread_mutex_lock(&lock);
    module_t *m = load(name);
    void *sym = NULL;
    if (m == NULL) {
        if (why != NULL && cap > 0)
            snprintf(why, cap, "the %s module cannot be loaded: too many modules", name);
    } else if (m->handle == NULL) {
        if (why != NULL && cap > 0)
            snprintf(why, cap, "%s", m->why);
    } else if ((sym = dlsym(m->handle, symbol)) == NULL && why != NULL && cap > 0) {
        snprintf(why, cap, "the %s module (%s/%s.so) lacks %s", name, dl__module_dir(), name,
                 symbol);
    }
    pthread_mutex_unlock(&lock);
    return sym;
}
