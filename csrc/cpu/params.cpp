// The CPU side of the draw-map ops (csrc/ops/params.h): a sample at a time on the calling thread.
#include <torch/library.h>

#include "../ops/params.h"

namespace torchaug {

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_draw_map_ops<DrawMapCpu>(m); }

}  // namespace torchaug
