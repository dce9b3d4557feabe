// Descriptive statistics of block samples (median, quartiles, CV), apart
// from spec/stats.hpp, the table of the stats gpusweep stores.
#pragma once

#include <vector>

namespace gpusweep::host {

struct Distribution {
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double q1 = 0;
  double q3 = 0;
  double iqr = 0;
  double stddev = 0;  // sample standard deviation (n-1)
  double cv = 0;      // stddev / mean; 0 when mean is 0
};

// Quantile with linear interpolation between order statistics (numpy's
// default, "type 7"). values must be non-empty; q in [0, 1].
double quantile(std::vector<double> values, double q);

// Throws std::invalid_argument on an empty input.
Distribution describe(const std::vector<double>& values);

// describe(values).cv without sorting (the values' order summed as given:
// equal to it within rounding); 0 for fewer than two values.
double cv_of(const std::vector<double>& values);

}  // namespace gpusweep::host
