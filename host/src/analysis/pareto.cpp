// The Pareto front; see pareto.hpp.
#include "analysis/pareto.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpusweep::host {

std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& memory_throughput) {
  // One pass in order of memory: a config is on the front when it is faster
  // than every smaller config and no slower than any other of its own size.
  std::vector<size_t> order(memory_throughput.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& [ax, ay] = memory_throughput[a];
    const auto& [bx, by] = memory_throughput[b];
    return ax != bx ? ax < bx : ay > by;
  });
  std::vector<bool> front(memory_throughput.size());
  double best_smaller = -INFINITY;
  for (size_t i = 0; i < order.size();) {
    const double x = memory_throughput[order[i]].first;
    const double group_best = memory_throughput[order[i]].second;
    size_t j = i;
    for (; j < order.size() && memory_throughput[order[j]].first == x; ++j) {
      const double y = memory_throughput[order[j]].second;
      front[order[j]] = y > best_smaller && y >= group_best;
    }
    best_smaller = std::max(best_smaller, group_best);
    i = j;
  }
  return front;
}

}  // namespace gpusweep::host
