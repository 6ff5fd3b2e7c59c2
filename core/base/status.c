#include "distlab/status.h"

const char *dl_strerror(dl_status_t st)
{
    switch (st) {
#define DL_STATUS_MSG(name, value, msg)                                                            \
    case DL_##name:                                                                                \
        return msg;
        DL_STATUS_MAP(DL_STATUS_MSG)
#undef DL_STATUS_MSG
    }
    return "unknown error";
}

const char *dl_status_name(dl_status_t st)
{
    switch (st) {
#define DL_STATUS_STR(name, value, msg)                                                            \
    case DL_##name:                                                                                \
        return "DL_" #name;
        DL_STATUS_MAP(DL_STATUS_STR)
#undef DL_STATUS_STR
    }
    return "DL_UNKNOWN";
}
