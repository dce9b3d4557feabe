// A worker's block event as the store keeps a block: the collector records
// it, the live view shows its throughput, both through db::block_throughput.
#pragma once

#include "protocol/event_payloads.hpp"

#include <gpusweep/db/store.hpp>

namespace gpusweep::host {

inline db::BlockSample block_sample(const event::Block& e) {
  db::BlockSample b;
  b.idx = e.idx;
  b.steps = e.steps;
  b.seconds = e.seconds;
  b.samples = e.samples;
  b.secondary_samples = e.secondary_samples;
  b.device_seconds = e.device_seconds;
  return b;
}

}  // namespace gpusweep::host
