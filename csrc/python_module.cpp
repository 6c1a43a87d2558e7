// Makes the extension importable as the Python module torchaug._C; importing it runs the static
// TORCH_LIBRARY registrations of the operator sources linked into it. Only setup.py builds this
// file: the CMake library for LibTorch users has no Python dependency.
#include <Python.h>

#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// A diagnostic for stalls (scripts/gpu_ddp_check.sh): with TORCHAUG_NATIVE_STACKS=1 in the
// environment, a thread that receives SIGUSR2 (tgkill from outside) writes its native stack to
// stderr. The device machine has no gdb; this shows, say, whether a decode that does not return is
// inside libnvjpeg or in a CUDA synchronisation under it.
void write_native_stack(int) {
  char line[96];
  const int n = std::snprintf(line, sizeof(line), "torchaug native stack of thread %ld:\n",
                              static_cast<long>(syscall(SYS_gettid)));
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
  void* frames[48];
  const int depth = backtrace(frames, 48);
  backtrace_symbols_fd(frames, depth, 2);
  (void)!write(2, "torchaug native stack end\n", 26);
}

void install_native_stack_handler() {
  const char* v = std::getenv("TORCHAUG_NATIVE_STACKS");
  if (v == nullptr || std::strcmp(v, "1") != 0) return;
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now, not inside the handler
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = write_native_stack;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR2, &action, nullptr);
}

}  // namespace

extern "C" {
PyObject* PyInit__C(void) {
  install_native_stack_handler();
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT,
      "_C",  // name
      "torchaug operators (registered under torch.ops.torchaug)",
      -1,    // size of per-interpreter state
      nullptr,
  };
  return PyModule_Create(&module_def);
}
}
