// The sweep file's parts that need each other (sweep.hpp): the error every
// check throws and its suggestion (sweep_parse.cpp), which the measure
// parser and validate_sweep throw too, and the measure object's parser
// (sweep_measure.cpp), which parse_sweep and apply_overrides read. Internal
// to the spec layer.
#pragma once

#include "spec/sweep.hpp"

#include <string>
#include <vector>

namespace gpusweep::host::detail {

// Throws UsageError: "source: where: what" (where may be "").
[[noreturn]] void usage(const std::string& source, const std::string& where,
                        const std::string& what);

// "; did you mean 'X'?" for a key near one of known, else "".
std::string suggestion(const std::string& key, const std::vector<std::string>& known);

// A sweep file's (or MeasureSpec::to_json's) "measure" object, checked.
MeasureSpec parse_measure(const std::string& source, const Json& m);

}  // namespace gpusweep::host::detail
