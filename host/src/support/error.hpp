// Errors inside the host: one base class; main() prints what(), exits non-zero.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace gpusweep {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (command line, sweep file): exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A plugin that cannot be used (it does not load, or its ABI or manifest is
// refused): what() names the plugin, reason() is the why alone.
class PluginError : public Error {
 public:
  PluginError(const std::string& what, std::string reason)
      : Error(what), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

}  // namespace gpusweep
