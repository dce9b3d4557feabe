// Units; see units.hpp.
#include "spec/units.hpp"

#include "support/error.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace gpusweep::host {

namespace {

enum class Kind { bytes, time, fraction, count };

struct Unit {
  double scale;
  Kind kind;
};

// Byte prefixes are case-insensitive apart from the "i": gib is GiB, gb is GB.
const std::map<std::string, Unit>& units() {
  static const std::map<std::string, Unit> table = [] {
    std::map<std::string, Unit> t = {
        {"", {1, Kind::count}},     {"B", {1, Kind::bytes}},       {"b", {1, Kind::bytes}},
        {"ns", {1e-9, Kind::time}}, {"us", {1e-6, Kind::time}},    {"ms", {1e-3, Kind::time}},
        {"s", {1, Kind::time}},     {"%", {0.01, Kind::fraction}}, {"k", {1e3, Kind::count}},
        {"M", {1e6, Kind::count}},  {"G", {1e9, Kind::count}}};
    const char* prefixes[] = {"k", "m", "g", "t"};
    for (int i = 0; i < 4; ++i) {
      const std::string p = prefixes[i];
      const std::string P(1, static_cast<char>(std::toupper(p[0])));
      const Unit binary{std::pow(1024.0, i + 1), Kind::bytes};
      const Unit decimal{std::pow(1000.0, i + 1), Kind::bytes};
      for (const std::string& x : {p, P}) {
        t[x + "iB"] = binary;
        t[x + "ib"] = binary;
        t[x + "B"] = decimal;
        t[x + "b"] = decimal;
      }
    }
    return t;
  }();
  return table;
}

struct Reading {
  double value;
  std::string unit;
};

Reading read_number(const std::string& text, const std::string& context, const char* example) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) {
    throw UsageError(context + ": '" + text + "' is not a number (e.g. " + example + ")");
  }
  std::string unit(end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  return {v, unit};
}

}  // namespace

double parse_size(const std::string& text, const std::string& context) {
  const Reading r = read_number(text, context, "2GiB, 512MiB, 8GB or 4096");
  const auto it = units().find(r.unit);
  const bool bytes = it != units().end() && (it->second.kind == Kind::bytes || r.unit.empty());
  if (!bytes) {
    std::string why = "unknown unit '" + r.unit + "'";
    if (r.unit.size() == 1 && std::string("kKmMgGtT").find(r.unit) != std::string::npos) {
      const std::string p(1, static_cast<char>(std::toupper(r.unit[0])));
      why = "'" + r.unit + "' is ambiguous: write " + p + "iB for powers of 1024 or " + p +
            "B for powers of 1000";
    }
    throw UsageError(context + ": " + why +
                     " (sizes: B, KiB MiB GiB TiB = powers of 1024, kB MB GB TB = powers of "
                     "1000)");
  }
  const double bytes_value = r.value * it->second.scale;
  if (!(bytes_value > 0))
    throw UsageError(context + ": a size must be positive, not '" + text + "'");
  return bytes_value;
}

double parse_quantity(const std::string& text, const std::string& context) {
  const Reading r = read_number(text, context, "8GiB, 2ms, 0.99*baseline");
  const auto it = units().find(r.unit);
  if (it == units().end()) {
    throw UsageError(context + ": unknown unit '" + r.unit +
                     "' (bytes: B KiB MiB GiB TiB kB MB GB TB; time: ns us ms s; %; counts: k M "
                     "G)");
  }
  return r.value * it->second.scale;
}

}  // namespace gpusweep::host
