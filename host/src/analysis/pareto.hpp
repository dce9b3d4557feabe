// The memory/throughput trade-off of a sweep's configs.
#pragma once

#include <utility>
#include <vector>

namespace gpusweep::host {

// For (peak memory, throughput) points: whether each is on the Pareto front,
// that is no other point has less or equal memory and more throughput, or
// less memory and equal throughput.
std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& memory_throughput);

}  // namespace gpusweep::host
