// Makes the extension importable as the Python module torchaug._C; importing it runs the static
// TORCH_LIBRARY registrations of the operator sources linked into it. Only setup.py builds this
// file: the CMake library for LibTorch users has no Python dependency.
//
// The module has one function, for the test suite: _set_test_hook(name, value) sets a test hook of
// csrc/ops/settings.h (-1 gives the choice back to the library).
#include <Python.h>
#include <c10/util/Exception.h>

#include <exception>

#include "ops/settings.h"

namespace {

PyObject* set_test_hook(PyObject*, PyObject* args) {
  const char* name = nullptr;
  long long value = 0;
  if (!PyArg_ParseTuple(args, "sL", &name, &value)) return nullptr;
  try {
    torchaug::test_hooks::set(name, value);
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"_set_test_hook", set_test_hook, METH_VARARGS, "_set_test_hook(name, value): sets a test hook (tests only)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

extern "C" {
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT,
      "_C",  // name
      "torchaug operators (registered under torch.ops.torchaug)",
      -1,    // size of per-interpreter state
      methods,
  };
  return PyModule_Create(&module_def);
}
}
