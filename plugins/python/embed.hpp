// The embedded CPython interpreter and a user's Python workload, behind a
// face free of Python.h (python_bridge.cpp includes LibTorch's precompiled
// headers, which Python.h must not follow).
//
// The interpreter starts at the first call, in the process that runs the
// trial: a fork server only loads this library (it never calls in here), so
// a trial forked from it starts Python after the fork, with no interpreter
// state or thread to break. It is never finalised: the worker ends with
// _exit once the trial is done.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>

namespace gpusweep::python {

using Json = nlohmann::json;

// The Python version this bridge was built against ("3.11.7"), and the
// interpreter whose environment (site-packages, torch) it uses.
const char* build_version();
std::string interpreter();

// The MANIFEST of the module spec names ("path/to/step.py" or
// "path/to/step.py:factory"), as JSON, before the common settings are added.
// Starts the interpreter and imports the module (once per process). Throws
// std::runtime_error naming the module, with the Python error's last lines.
Json module_manifest(const std::string& spec);

// A digest of the module's source and of the modules it imported from its
// folder or below (its siblings and packages), as hex; imports the module.
std::string module_digest(const std::string& spec);

// A digest of a training script (the `script` workload) and of the modules
// it imports from its folder or below, found in its source (not run), as
// hex.
std::string script_digest(const std::string& script);

// The installed distributions of the top-level modules the interpreter has
// imported, with their versions ({"transformers": "5.24.0", ...}): what a
// trial's result depends on beside LibTorch. Empty before Python started.
Json imported_packages();

// A script sweep's flag map (base.flags: a built-in map's name or a map of
// the sweep's own) checked: {"problem": what is wrong ("" when nothing: a
// setting it names that settings, name -> the allowed values' texts or
// null, lacks, with the nearest names, or a rule of the wrong shape),
// "mapped": the settings it carries}.
Json check_script_flags(const Json& flags, const Json& settings);

// A live workload of a Python module. Every call holds the GIL only for
// its duration, so Python threads of the workload (a DataLoader's pinning
// thread) run between calls. Errors out of Python become gpusweep::Skipped
// (gpusweep.Skipped), gpusweep::OutOfMemory (MemoryError, CUDA OOM) or
// std::runtime_error, each with the traceback's last lines.
class Workload {
 public:
  // diagnose: a `gpusweep diagnose` trial (the SDK's Settings.phase times phases).
  // An empty spec is the `script` workload: the script config.script names,
  // run by the SDK's gpusweep._script.
  Workload(const std::string& spec, const Json& config, const std::string& device, bool diagnose);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // samples and secondary samples of one step.
  std::pair<double, double> step();
  Json evaluate();
  Json stats();
  void pause();
  void resume();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace gpusweep::python
