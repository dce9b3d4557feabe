// A Python workload's module, as a sweep names it: "path/step.py" or
// "path/step.py:factory". The part after the last colon names a factory only
// when it is an identifier, so that a path with a colon in it stays a path.
// The host (making the path absolute), the python plugin (digesting the file)
// and the Python SDK (gpusweep._bridge.split_spec, importing it) read a spec
// by this one rule.
#pragma once

#include <string>

namespace gpusweep {

struct ModuleSpec {
  std::string file;
  std::string factory;  // empty when the spec names none
};

// True for an ASCII identifier: a letter or '_', then letters, digits, '_'.
inline bool is_identifier(const std::string& s) {
  auto head = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !head(s[0])) return false;
  for (char c : s) {
    if (!head(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

inline ModuleSpec split_module_spec(const std::string& spec) {
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon > 0 && is_identifier(spec.substr(colon + 1))) {
    return {spec.substr(0, colon), spec.substr(colon + 1)};
  }
  return {spec, ""};
}

}  // namespace gpusweep
