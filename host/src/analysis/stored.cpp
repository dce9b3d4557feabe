// Stored sweeps; see stored.hpp.
#include "analysis/stored.hpp"

namespace gpusweep::host {

SweepSpec stored_spec(const db::SweepRecord& sweep) {
  SweepSpec spec = parse_sweep(sweep.spec_json, "sweep '" + sweep.name + "' in the database");
  return spec;
}

}  // namespace gpusweep::host
