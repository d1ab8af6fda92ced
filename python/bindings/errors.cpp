#include "errors.h"

#include <Python.h>

namespace quill::py {
namespace nb = nanobind;
namespace {

struct ErrorTypes {
  PyObject* base = nullptr;  // QuillError
  PyObject* invalid_argument = nullptr;
  PyObject* invalid_file = nullptr;
  PyObject* not_found = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* io = nullptr;
  PyObject* cancelled = nullptr;
  PyObject* device = nullptr;
  PyObject* non_finite = nullptr;
};
ErrorTypes g_types;  // created once at import; the module keeps them alive

PyObject* new_type(nb::module_& m, const char* name, const char* doc, PyObject* builtin) {
  const std::string qualified = std::string("quill.") + name;
  PyObject* bases = builtin ? PyTuple_Pack(2, g_types.base, builtin) : PyTuple_Pack(1, g_types.base);
  PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (!t) throw nb::python_error();
  m.attr(name) = nb::handle(t);
  return t;
}

PyObject* type_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange:
      return g_types.invalid_argument;
    case ErrorCode::kInvalidFile:
      return g_types.invalid_file;
    case ErrorCode::kNotFound:
      return g_types.not_found;
    case ErrorCode::kUnsupported:
      return g_types.unsupported;
    case ErrorCode::kIo:
      return g_types.io;
    case ErrorCode::kCancelled:
      return g_types.cancelled;
    case ErrorCode::kDevice:
      return g_types.device;
    case ErrorCode::kNonFinite:
      return g_types.non_finite;
    default:
      return g_types.base;
  }
}

}  // namespace

void register_errors(nb::module_& m) {
  g_types.base = PyErr_NewExceptionWithDoc("quill.QuillError",
                                           "An error from Quill; `code` names its kind (e.g. 'invalid_argument').",
                                           PyExc_RuntimeError, nullptr);
  if (!g_types.base) throw nb::python_error();
  m.attr("QuillError") = nb::handle(g_types.base);
  g_types.invalid_argument =
      new_type(m, "InvalidArgumentError", "A bad argument or setting (also a ValueError).", PyExc_ValueError);
  g_types.invalid_file =
      new_type(m, "InvalidFileError", "A corrupt, truncated or wrong file (also a ValueError).", PyExc_ValueError);
  g_types.not_found =
      new_type(m, "NotFoundError", "A missing file, tensor or key (also a FileNotFoundError).", PyExc_FileNotFoundError);
  g_types.unsupported =
      new_type(m, "UnsupportedError", "Valid but not implemented (also a NotImplementedError).", PyExc_NotImplementedError);
  g_types.io = new_type(m, "QuillIOError", "The operating system refused (also an OSError).", PyExc_OSError);
  g_types.cancelled = new_type(m, "Cancelled", "The request was cancelled (a CancelToken or a progress callback).", nullptr);
  g_types.device = new_type(m, "DeviceError", "An accelerator error.", nullptr);
  g_types.non_finite =
      new_type(m, "NonFiniteError", "NaN or Inf came out of finite inputs (also an ArithmeticError).", PyExc_ArithmeticError);
}

void raise(const Status& status) {
  PyObject* type = type_for(status.code());
  const std::string message = status.to_string();
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), Py_ssize_t(message.size()), "replace");
  if (!text) throw nb::python_error();
  PyObject* exc = PyObject_CallOneArg(type, text);
  Py_DECREF(text);
  if (!exc) throw nb::python_error();
  PyObject* code = PyUnicode_FromString(error_code_name(status.code()));
  if (code) {
    PyObject_SetAttrString(exc, "code", code);
    Py_DECREF(code);
  }
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  throw nb::python_error();
}

}  // namespace quill::py
