// The user settings and the test hooks (csrc/ops/settings.h).
#include "settings.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "common.h"

namespace torchaug {
namespace settings {
namespace {

// The integer value of variable `name`, or `fallback` where it is unset; a value that is not an
// integer in [lo, hi] is an error naming `who`, the variable and the value.
int env_int(const char* who, const char* name, int lo, int hi, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TORCHAUG_CHECK(end != v && *end == '\0' && n >= lo && n <= hi, who, ": ", name, " must be an integer in [", lo, ", ",
                 hi, "], got '", v, "'");
  return static_cast<int>(n);
}

}  // namespace

int nvjpeg_decoders() { return env_int("torchaug::decode_jpeg", "TORCHAUG_NVJPEG_DECODERS", 1, 16, 2); }

int nvjpeg_threads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return env_int("torchaug::decode_jpeg", "TORCHAUG_NVJPEG_THREADS", 1, 256, std::max(1, std::min(8, cores / 2)));
}

bool decode_trace() {
  static const bool on = [] {
    const char* v = std::getenv("TORCHAUG_DECODE_TRACE");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

}  // namespace settings

namespace test_hooks {
namespace {

struct HookInfo {
  const char* name;
  int64_t lo, hi;  // the values a test may set besides -1
};

constexpr HookInfo kHooks[kHookCount] = {
    {"augment_resident", 0, 1}, {"resident_order", 0, 0},       {"dependent_launch", 0, 0},
    {"nvjpeg_reject", 1, 2},    {"nms_shared_tiles", 0, 65535}, {"decode_parse_threads", 1, 1024},
};

std::atomic<int64_t> values[kHookCount] = {-1, -1, -1, -1, -1, -1};

}  // namespace

int64_t get(Hook hook) { return values[hook].load(std::memory_order_relaxed); }

void set(const std::string& name, int64_t value) {
  std::string known;
  for (int h = 0; h < kHookCount; ++h) {
    const HookInfo& info = kHooks[h];
    if (name != info.name) {
      known += cat(known.empty() ? "" : ", ", info.name);
      continue;
    }
    TORCHAUG_CHECK(value == -1 || (value >= info.lo && value <= info.hi), "torchaug test hook ", name,
                   ": value must be -1 (the library's choice) or in [", info.lo, ", ", info.hi, "], got ", value);
    values[h].store(value, std::memory_order_relaxed);
    return;
  }
  TORCHAUG_CHECK(false, "torchaug: no test hook named '", name, "' (hooks: ", known, ")");
}

}  // namespace test_hooks
}  // namespace torchaug
