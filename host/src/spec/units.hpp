// Quantities with units, one meaning everywhere: sizes in bytes with binary
// (KiB MiB GiB TiB = powers of 1024) or decimal (kB MB GB TB = powers of
// 1000) prefixes, so `8GB` is 8e9 bytes and `8GiB` is 2^33 bytes wherever a
// size is read (measure.max_memory, --max-memory, --constraint); times
// (ns us ms s); percentages; and k M G as decimal multipliers of a count.
#pragma once

#include <string>

namespace gpusweep::host {

// A positive size in bytes: "2GiB", "512MiB", "8GB", "4096" (bytes). A bare
// K, M, G or T is refused as ambiguous, naming both readings. Throws
// UsageError starting with context.
double parse_size(const std::string& text, const std::string& context);

// A number with any of the units above ("8GiB", "2ms", "95%", "1.5M",
// "1e6"). Throws UsageError starting with context.
double parse_quantity(const std::string& text, const std::string& context);

}  // namespace gpusweep::host
