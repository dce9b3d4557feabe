// The sweep file's "measure" keys, defined once: each key's type, default,
// allowed values and meaning. The parser takes its unknown-key and bad-value
// errors from this table, `gpusweep run --help` lists it, and the table in
// docs/sweep-file.md is `gpusweep settings --measure --format md` (a test
// keeps it current).
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace gpusweep::host {

// How the parser checks a key's value.
enum class MeasureType {
  integer,   // whole number in [min, max], or one of `words` ("auto")
  boolean,   // true or false
  seconds,   // finite number of seconds, min or more (above min when min_exclusive)
  fraction,  // number strictly between 0 and 1
  size,      // "8GiB" or a number of bytes
  choice,    // one of `words`
  object,    // checked by its own parser (measure.target)
};

struct MeasureKey {
  std::string name;
  MeasureType type;
  double min = 0;
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> words;  // the strings a choice (or an integer) may be
  std::string default_text;        // "10", "\"auto\"", "none", ...
  std::string condition;           // what the value needs beyond its range; "" when nothing
  std::string meaning;
};

// Every key a sweep file's "measure" may hold, in the order people read them.
const std::vector<MeasureKey>& measure_keys();
// The table's entry for name; nullptr when name is not a measure key.
const MeasureKey* find_measure_key(const std::string& name);
// The keys' names, in the table's order.
std::vector<std::string> measure_key_names();
// What a value of the key may be, in words: "an integer, 5 or more".
std::string measure_allowed(const MeasureKey& key);
// The keys as `gpusweep run --help` lists them: one line each, name, allowed
// values and default.
std::string measure_keys_help();

}  // namespace gpusweep::host
