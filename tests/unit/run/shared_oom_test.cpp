// An OOM on a GPU shared by interleaved trials is labelled as possibly a
// neighbour's (each waiting trial holds its device memory); any other outcome is left as it was.
#include "run/sweep_run.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("an OOM while taking turns on a shared GPU says the memory may be a neighbour's",
          "[run]") {
  db::TrialOutcome oom;
  oom.status = db::TrialStatus::oom;
  oom.error = "CUDA out of memory. Tried to allocate 2.00 GiB";
  oom.interleave_group = "g1";
  GpuAssignment shared;
  shared.gpus = {"GPU-1234"};
  shared.shared = true;

  db::TrialOutcome labelled = oom;
  label_shared_oom(labelled, shared);
  CHECK_THAT(*labelled.error, Contains("Tried to allocate 2.00 GiB") &&
                                  Contains("GPU GPU-1234 with other trials") &&
                                  Contains("measure.interleave 1"));
  CHECK(labelled.status == db::TrialStatus::oom);

  // Alone on its GPU, not interleaved, or not an OOM: nothing added.
  GpuAssignment own = shared;
  own.shared = false;
  db::TrialOutcome alone = oom;
  label_shared_oom(alone, own);
  CHECK(*alone.error == *oom.error);
  db::TrialOutcome ungrouped = oom;
  ungrouped.interleave_group.reset();
  label_shared_oom(ungrouped, shared);
  CHECK(*ungrouped.error == *oom.error);
  db::TrialOutcome failed = oom;
  failed.status = db::TrialStatus::failed;
  label_shared_oom(failed, shared);
  CHECK(*failed.error == *oom.error);
}
