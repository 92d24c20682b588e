// libgpuleak's exported driver symbols, one per hooks.def row, for programs linked with -lcuda
// that call the driver through the PLT (and for dlsym(RTLD_DEFAULT, ...) lookups). Each forwards
// to the row's handler with the next definition of the same name, libcuda's.
#include <type_traits>

#include "shim/slots.h"

using namespace gpuleak::shim;

// The static_assert keeps a row's parameters to its PFN typedef's exact type: the export is what
// the program's PLT calls in place of libcuda's function.
#define GPULEAK_EXPORT(EXPORT, BASE, MINV, MAXV, PTSZ, PFN, HANDLER, PARAMS, ARGS)                                   \
  extern "C" __attribute__((visibility("default"))) CUresult EXPORT PARAMS { return GPULEAK_EXPORTED(EXPORT) ARGS; } \
  static_assert(std::is_same_v<decltype(&EXPORT), PFN>, #EXPORT ": parameters differ from " #PFN);
GPULEAK_DRIVER_HOOKS(GPULEAK_EXPORT)
#undef GPULEAK_EXPORT
