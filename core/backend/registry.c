#include <string.h>

#include "backend/backend.h"

static const dl_backend_ops_t *const backends[] = {&dl__builtin_ops, NULL};

const dl_backend_ops_t *dl__backend_find(const char *name)
{
    for (int i = 0; backends[i] != NULL; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}
