// Errors inside the host: one base class; main() prints what(), exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace gpusweep
