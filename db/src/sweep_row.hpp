// A sweeps row read into a SweepRecord: the columns to select and the
// reader, in one place for the store's reads and a merge's (a shard's
// sweeps table has the same columns).
#pragma once

#include <gpusweep/db/sqlite.hpp>
#include <gpusweep/db/store.hpp>

namespace gpusweep::db {

// The columns read_sweep reads, in its order: "SELECT " + kSweepColumns.
inline constexpr const char* kSweepColumns =
    "id, name, workload, file_path, file_hash, spec_json, spec_hash, status, created_at, "
    "run_key, shard_index, shard_count, kind";

inline SweepRecord read_sweep(const Statement& st) {
  SweepRecord s;
  s.id = st.get_int(0);
  s.name = st.get_text(1);
  s.workload = st.get_text(2);
  s.file_path = st.get_optional_text(3);
  s.file_hash = st.get_optional_text(4);
  s.spec_json = st.get_text(5);
  s.spec_hash = st.get_text(6);
  s.status = parse_sweep_status(st.get_text(7)).value_or(SweepStatus::running);
  s.created_at = st.get_text(8);
  s.run_key = st.get_optional_text(9);
  if (!st.is_null(10)) s.shard_index = st.get_int(10);
  if (!st.is_null(11)) s.shard_count = st.get_int(11);
  s.kind = parse_run_kind(st.get_text(12)).value_or(RunKind::sweep);
  return s;
}

}  // namespace gpusweep::db
