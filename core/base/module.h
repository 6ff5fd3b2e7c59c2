/* The optional parts of distlab (the mpi and nccl backends, cuda tensors)
 * are modules: shared objects loaded the first time a run asks for one, so
 * that a builtin run never maps Open MPI, the CUDA runtime or NCCL. See
 * module.c for where they are looked for. */
#ifndef DL_BASE_MODULE_H
#define DL_BASE_MODULE_H

#include <stddef.h>

/* The address of symbol in module name ("mpi", "nccl", "cuda"), loading
 * the module on first use. NULL when the module cannot be loaded or lacks
 * the symbol; then why (when not NULL) receives one line naming the module
 * and dlerror's reason. A module that failed once is not tried again. */
void *dl__module_symbol(const char *name, const char *symbol, char *why, size_t cap);

/* The folder modules are loaded from (see module.c). */
const char *dl__module_dir(void);

#endif
