// Human names of the capture's enums, shared by every writer of text.
#include "format/capture_format.h"

namespace gpuleak::format {

const char *api_name(uint16_t api) {
  static const char *const names[] = {
#define GPULEAK_API_NAME(id, name) name,
      GPULEAK_API_LIST(GPULEAK_API_NAME)
#undef GPULEAK_API_NAME
  };
  return api < sizeof(names) / sizeof(names[0]) ? names[api] : "unknown";
}

const char *kind_name(uint8_t kind) {
  static const char *const names[] = {"unknown",  "device",      "async",           "vmm",   "managed",
                                      "pitched",  "host_pinned", "host_registered", "array", "mipmapped_array",
                                      "imported", "virtual",     "pool_block"};
  return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

const char *op_name(uint8_t op) {
  static const char *const names[] = {"unknown",     "alloc",        "free",         "map",
                                      "unmap",       "reserve",      "release_va",   "pool_trim",
                                      "pool_create", "pool_destroy", "context_reset"};
  return op < sizeof(names) / sizeof(names[0]) ? names[op] : "unknown";
}

}  // namespace gpuleak::format
