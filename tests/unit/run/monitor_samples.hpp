// What the monitor tests read of a trial's samples.
#pragma once

#include <gpusweep/db/store.hpp>

#include <map>
#include <string>
#include <vector>

namespace gpusweep::test {

// Each summary sample (at step 0) by name, the timeline left out.
inline std::map<std::string, double> summary(const std::vector<db::MetricSample>& rows) {
  std::map<std::string, double> m;
  for (const auto& r : rows) {
    if (r.at_step == 0 && r.name.rfind("monitor_timeline", 0) != 0) m[r.name] = r.value;
  }
  return m;
}

}  // namespace gpusweep::test
