// Stand-in for the header a CUDA build of torch generates (a CPU-only torch wheel lacks it), so that
// scripts/check_cuda_compile.sh can compile csrc/cuda/*.cu against a CPU torch's headers.
#pragma once
#define C10_CUDA_BUILD_SHARED_LIBS
