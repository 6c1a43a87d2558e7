// The settings a user may change, read from the environment in this one place (the settings table
// of README.md lists them), and the test hooks: switches that only the test suite sets, through
// torchaug._C._set_test_hook, to force a path the library otherwise chooses by itself. Nothing else
// in csrc/ reads the environment.
#pragma once

#include <cstdint>
#include <string>

namespace torchaug {
namespace settings {

// TORCHAUG_NVJPEG_DECODERS: how many nvJPEG decoders of a device calls from different threads may
// use at once, in [1, 16]; default 2. Read at each decode call.
int nvjpeg_decoders();

// TORCHAUG_NVJPEG_THREADS: the CPU threads (lanes) of nvJPEG's hybrid decoder, in [1, 256]; default
// half the machine's cores, at most 8. Read when a decoder makes its lanes (its first hybrid decode).
int nvjpeg_threads();

// TORCHAUG_DECODE_TRACE=1: a line on stderr as a CUDA decode enters each step (where a decode that
// does not return is). Read once.
bool decode_trace();

}  // namespace settings

namespace test_hooks {

// Each hook holds -1 (the library's own choice) unless a test set it.
enum Hook : int {
  kAugmentResident,     // augment's resident path (CUDA kernel, CPU sample by sample): 0 never, 1 always (an error where it cannot run)
  kResidentOrder,       // 0: the resident kernel takes samples in index order (no cost-ordering kernel)
  kDependentLaunch,     // 0: ordinary launches instead of programmatic dependent launches
  kNvjpegReject,        // 1: every hardware batch counts as rejected by nvJPEG; 2: the lanes fail every file too
  kNmsSharedTiles,      // the most tiles whose removal words NMS keeps in shared memory (default 5120)
  kDecodeParseThreads,  // the most threads the JPEG header and scan checks take (default 4)
  kHookCount
};

int64_t get(Hook hook);

// Sets the hook named `name` (the enum's name in snake case without the k: "augment_resident") to
// `value`, -1 restoring the library's choice; an unknown name or a value out of the hook's range is
// an error that says which.
void set(const std::string& name, int64_t value);

}  // namespace test_hooks
}  // namespace torchaug
