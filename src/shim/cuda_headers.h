// The CUDA headers, included one way everywhere in the shim: the PFN_* typedefs of
// cudaTypedefs.h are the exact ABI of each driver entry point (research/CAPTURE.md section 8).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

// cuda.h renames cuGetProcAddress to cuGetProcAddress_v2; gpuleak needs both names as written
// (the v1 export takes 4 arguments, the v2 one 5).
#undef cuGetProcAddress
