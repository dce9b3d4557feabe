// The embedded interpreter; see embed.hpp.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "embed.hpp"

#include <gpusweep/common_settings.hpp>
#include <gpusweep/workload.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace gpusweep::python {

namespace {

// A strong reference, released at scope's end (with the GIL held).
class Ref {
 public:
  explicit Ref(PyObject* p = nullptr) : p_(p) {}
  ~Ref() { Py_XDECREF(p_); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  PyObject* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  PyObject* p_;
};

class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

PyObject* g_bridge = nullptr;  // gpusweep._bridge, for the process's lifetime

std::string text_of(PyObject* o) {
  if (o == nullptr) return "";
  Ref s(PyObject_Str(o));
  const char* c = s ? PyUnicode_AsUTF8(s.get()) : nullptr;
  if (c == nullptr) {
    PyErr_Clear();
    return "(unprintable)";
  }
  return c;
}

// The pending Python exception as the SDK's exception: its kind and message
// from gpusweep._bridge.describe_exception, prefixed by what was called.
[[noreturn]] void throw_pending(const std::string& where) {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr && value != nullptr) PyException_SetTraceback(value, tb);
  Ref t(type), v(value), b(tb);
  std::string kind = "error";
  std::string message;
  if (g_bridge != nullptr && v) {
    Ref r(PyObject_CallMethod(g_bridge, "describe_exception", "O", v.get()));
    if (r && PyTuple_Check(r.get()) && PyTuple_Size(r.get()) == 2) {
      kind = text_of(PyTuple_GetItem(r.get(), 0));
      message = text_of(PyTuple_GetItem(r.get(), 1));
    } else {
      PyErr_Clear();
    }
  }
  if (message.empty()) message = v ? text_of(v.get()) : "unknown Python error";
  if (kind == "skipped") throw Skipped(message);
  if (kind == "oom") throw OutOfMemory(where + ": " + message);
  throw std::runtime_error(where + ": " + message);
}

std::string string_result(PyObject* o, const std::string& where) {
  const char* c = o != nullptr ? PyUnicode_AsUTF8(o) : nullptr;
  if (c == nullptr) throw_pending(where);
  return c;
}

// Extension modules (torch._C, numpy's) are not linked against libpython:
// they find its symbols in the process's global scope, where a library
// dlopen'ed locally (this plugin and its libpython) is not.
void expose_libpython() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) != 0 &&
      info.dli_fname != nullptr) {
    ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  }
}

// Where the gpusweep package (sdk/python) is: GPUSWEEP_PYTHON_SDK, else
// ../python beside this library's folder (an install: lib/gpusweep/python),
// else the source tree's.
std::string sdk_dir() {
  if (const char* env = std::getenv("GPUSWEEP_PYTHON_SDK"); env != nullptr && *env != '\0') {
    return env;
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&sdk_dir), &info) != 0 && info.dli_fname != nullptr) {
    const auto installed =
        std::filesystem::path(info.dli_fname).parent_path().parent_path() / "python";
    std::error_code ec;
    if (std::filesystem::exists(installed / "gpusweep" / "_bridge.py", ec)) {
      return installed.string();
    }
  }
  return GPUSWEEP_PYTHON_SDK_DIR;
}

// Starts the interpreter once per process: no signal handlers of its own
// (the worker's and the host's stay in charge: SIGINT ends the trial as
// for a C++ plugin), unbuffered output (a crash loses none of the log),
// the environment of `interpreter()`.
void start() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    expose_libpython();
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    config.buffered_stdio = 0;
    const std::string exe = interpreter();
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
      error = "cannot start Python (" + exe +
              "): " + (status.err_msg != nullptr ? status.err_msg : "unknown error");
      return;
    }
    {
      PyObject* path = PySys_GetObject("path");  // borrowed
      Ref dir(PyUnicode_DecodeFSDefault(sdk_dir().c_str()));
      if (path == nullptr || !dir || PyList_Insert(path, 0, dir.get()) != 0) PyErr_Clear();
    }  // dir released with the GIL still held
    g_bridge = PyImport_ImportModule("gpusweep._bridge");
    if (g_bridge != nullptr) {
      // The allocation-failure markers of the C++ boundary, the Python side's.
      Ref markers(PyList_New(0));
      for (const char* m : gpusweep::detail::kOomMarkers) {
        Ref text(PyUnicode_FromString(m));
        if (markers && text) PyList_Append(markers.get(), text.get());
      }
      if (!markers || PyObject_SetAttrString(g_bridge, "OOM_MARKERS", markers.get()) != 0) {
        PyErr_Clear();
      }
      // The common settings' table, from which the SDK's Settings read
      // their names, defaults and ranges.
      Ref table(PyUnicode_FromString(gpusweep::common_settings_json().dump().c_str()));
      if (!table || PyObject_SetAttrString(g_bridge, "SETTINGS_TABLE", table.get()) != 0) {
        PyErr_Clear();
      }
    }
    if (g_bridge == nullptr) {
      error = "cannot import gpusweep's Python SDK from " + sdk_dir() + " with " + exe;
      PyObject* type = nullptr;
      PyObject* value = nullptr;
      PyObject* tb = nullptr;
      PyErr_Fetch(&type, &value, &tb);
      error += ": " + text_of(value);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
    }
    PyEval_SaveThread();  // the GIL is taken per call from here on
  });
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace

const char* build_version() { return PY_VERSION; }

std::string interpreter() {
  if (const char* env = std::getenv("GPUSWEEP_PYTHON"); env != nullptr && *env != '\0') {
    // A virtual environment's folder means its interpreter: started as the
    // folder, Python would find none of the environment's packages.
    std::error_code ec;
    if (std::filesystem::is_directory(env, ec)) {
      const auto python = std::filesystem::path(env) / "bin" / "python3";
      if (!std::filesystem::exists(python, ec)) {
        throw std::runtime_error(std::string("GPUSWEEP_PYTHON=") + env +
                                 " is a folder without bin/python3; give a Python interpreter "
                                 "(a virtual environment's bin/python3)");
      }
      return python.string();
    }
    return env;
  }
  return GPUSWEEP_PYTHON_EXECUTABLE;
}

namespace {

// The text the bridge's function `name` returns for one string argument;
// its exception rethrown against `where`.
std::string bridge_text(const char* name, const std::string& arg, const std::string& where) {
  start();
  Gil gil;
  Ref text(PyObject_CallMethod(g_bridge, name, "s", arg.c_str()));
  if (!text) throw_pending(where);
  return string_result(text.get(), where);
}

}  // namespace

Json module_manifest(const std::string& spec) {
  return Json::parse(bridge_text("manifest_json", spec, "python module '" + spec + "'"));
}

std::string module_digest(const std::string& spec) {
  return bridge_text("source_digest", spec, "python module '" + spec + "'");
}

std::string script_digest(const std::string& script) {
  return bridge_text("script_digest", script, "script '" + script + "'");
}

Json imported_packages() {
  if (Py_IsInitialized() == 0 || g_bridge == nullptr) return Json::object();
  return Json::parse(bridge_text("imported_packages", "", "the imported packages"));
}

Json check_script_flags(const Json& flags, const Json& settings) {
  const Json arg = {{"flags", flags}, {"settings", settings}};
  return Json::parse(bridge_text("check_script_flags", arg.dump(), "the script's flag map"));
}

struct Workload::State {
  std::string spec;
  Ref instance, step, evaluate, stats, pause, resume;
};

namespace {

// instance.name, or an empty Ref when it is None.
Ref attribute(PyObject* instance, const char* name, const std::string& where) {
  Ref a(PyObject_GetAttrString(instance, name));
  if (!a) throw_pending(where);
  if (a.get() == Py_None) return Ref();
  return a;
}

}  // namespace

Workload::Workload(const std::string& spec, const Json& config, const std::string& device,
                   bool diagnose)
    : s_(std::make_unique<State>()) {
  start();
  Gil gil;
  try {
    s_->spec = spec;
    const std::string where = spec.empty() ? "script '" + config.value("script", "") + "'"
                                           : "python module '" + spec + "'";
    s_->instance =
        spec.empty()
            ? Ref(PyObject_CallMethod(g_bridge, "create_script", "ssi", config.dump().c_str(),
                                      device.c_str(), diagnose ? 1 : 0))
            : Ref(PyObject_CallMethod(g_bridge, "create", "sssi", spec.c_str(),
                                      config.dump().c_str(), device.c_str(), diagnose ? 1 : 0));
    if (!s_->instance)
      throw_pending(where + (spec.empty() ? ", until its first step" : ", create(config)"));
    PyObject* inst = s_->instance.get();
    s_->step = attribute(inst, "step", where);
    s_->evaluate = attribute(inst, "evaluate", where);
    s_->stats = attribute(inst, "stats", where);
    s_->pause = attribute(inst, "pause", where);
    s_->resume = attribute(inst, "resume", where);
  } catch (...) {
    s_.reset();  // its references released while the GIL is held
    throw;
  }
}

Workload::~Workload() {
  Gil gil;
  s_.reset();
}

std::pair<double, double> Workload::step() {
  Gil gil;
  Ref r(PyObject_CallNoArgs(s_->step.get()));
  if (!r) throw_pending("step()");
  PyObject* o = r.get();
  double samples = 0;
  double secondary = 0;
  if (PyTuple_Check(o) && PyTuple_Size(o) == 2) {
    samples = PyFloat_AsDouble(PyTuple_GetItem(o, 0));
    if (PyErr_Occurred() != nullptr) throw_pending("step()'s samples");
    secondary = PyFloat_AsDouble(PyTuple_GetItem(o, 1));
  } else if ((PyLong_Check(o) || PyFloat_Check(o)) && !PyBool_Check(o)) {
    samples = PyFloat_AsDouble(o);
  } else {
    throw std::runtime_error("step() returned " + std::string(Py_TYPE(o)->tp_name) + " " +
                             text_of(o) +
                             "; return the samples it processed (a number), or "
                             "(samples, secondary_samples)");
  }
  if (PyErr_Occurred() != nullptr) throw_pending("step()'s result");
  return {samples, secondary};
}

namespace {

Json json_call(PyObject* method, const std::string& where) {
  Ref r(PyObject_CallNoArgs(method));
  if (!r) throw_pending(where);
  return Json::parse(string_result(r.get(), where));
}

void call_optional(PyObject* method, const std::string& where) {
  if (method == nullptr) return;
  Ref r(PyObject_CallNoArgs(method));
  if (!r) throw_pending(where);
}

}  // namespace

Json Workload::evaluate() {
  Gil gil;
  return json_call(s_->evaluate.get(), "evaluate()");
}

Json Workload::stats() {
  Gil gil;
  return json_call(s_->stats.get(), "stats()");
}

void Workload::pause() {
  Gil gil;
  call_optional(s_->pause.get(), "pause()");
}

void Workload::resume() {
  Gil gil;
  call_optional(s_->resume.get(), "resume()");
}

}  // namespace gpusweep::python
