// The CUDA headers, included one way everywhere in the shim: the PFN_* typedefs of
// cudaTypedefs.h are the exact ABI of each driver entry point (research/CAPTURE.md section 8).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

// cuda.h renames cuGetProcAddress to cuGetProcAddress_v2; gpuleak needs both names as written
// (the v1 export takes 4 arguments, the v2 one 5).
#undef cuGetProcAddress
// Likewise cuStreamBeginCapture (the 1-argument export of CUDA 10.0; the 2-argument one is _v2).
#undef cuStreamBeginCapture
#undef cuStreamBeginCapture_ptsz

// The legacy 1-argument cuStreamBeginCapture, which cudaTypedefs.h only declares internally.
typedef CUresult(CUDAAPI *PFN_gpuleak_cuStreamBeginCapture_v10000)(CUstream hStream);
