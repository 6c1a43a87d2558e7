// Makes the extension importable as the Python module torchaug._C; importing it runs the static
// TORCH_LIBRARY registrations of the operator sources linked into it. Only setup.py builds this
// file: the CMake library for LibTorch users has no Python dependency.
#include <Python.h>

extern "C" {
PyObject* PyInit__C(void) {
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
