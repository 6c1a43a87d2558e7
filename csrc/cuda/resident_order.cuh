// The order in which the blocks of augment's resident kernel take the samples (csrc/cuda/resident_order.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../ops/common.h"

namespace torchaug {

// Writes order (B,) int32 on the current device, as a dependent launch on `stream`: the sample
// indices of the program ops (B, n) (strides ops_s), the `lead` cheapest first, then the others the
// most costly first; bilinear: the geometric slots sample bilinearly (they cost more).
void launch_resident_order(const int64_t* ops, Strides2 ops_s, int B, int n, bool bilinear, int lead, int* order,
                           cudaStream_t stream, int device);

}  // namespace torchaug
