// median() and percentile() as SQL aggregates (see aggregates.hpp).
#include "aggregates.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

namespace gpusweep::db::detail {

namespace {

// An aggregate's state: the numeric values seen, and the percentile asked.
// SQLite hands it over zero-filled, never constructed.
struct Values {
  std::vector<double>* v;
  double percent;
  bool has_percent;
  bool bad_percent;
};

Values* state(sqlite3_context* ctx, bool create) {
  auto* s = static_cast<Values*>(sqlite3_aggregate_context(ctx, create ? sizeof(Values) : 0));
  if (s != nullptr && s->v == nullptr && create) s->v = new (std::nothrow) std::vector<double>();
  return s;
}

void step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  Values* s = state(ctx, true);
  if (s == nullptr || s->v == nullptr) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (argc > 1) {
    const double p = sqlite3_value_double(argv[1]);
    if (!(p >= 0 && p <= 100) || (s->has_percent && p != s->percent)) s->bad_percent = true;
    s->percent = p;
    s->has_percent = true;
  }
  const int type = sqlite3_value_numeric_type(argv[0]);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
    s->v->push_back(sqlite3_value_double(argv[0]));
}

// The p-th percentile (0..100), interpolated between the closest ranks as
// SQLite's own percentile extension and numpy's default do; NULL for no
// values.
void final(sqlite3_context* ctx, double p) {
  Values* s = state(ctx, false);
  if (s == nullptr || s->v == nullptr) {
    sqlite3_result_null(ctx);
    return;
  }
  std::vector<double>& v = *s->v;
  if (s->bad_percent) {
    sqlite3_result_error(ctx, "percentile(X, P): P must be one number from 0 to 100", -1);
  } else if (v.empty()) {
    sqlite3_result_null(ctx);
  } else {
    std::sort(v.begin(), v.end());
    const double at = (std::isnan(p) ? s->percent : p) / 100 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    sqlite3_result_double(ctx, v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo)));
  }
  delete s->v;
  s->v = nullptr;
}

void median_final(sqlite3_context* ctx) { final(ctx, 50); }
void percentile_final(sqlite3_context* ctx) { final(ctx, NAN); }

}  // namespace

void register_aggregates(sqlite3* db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  sqlite3_create_function(db, "median", 1, flags, nullptr, nullptr, step, median_final);
  sqlite3_create_function(db, "percentile", 2, flags, nullptr, nullptr, step, percentile_final);
}

}  // namespace gpusweep::db::detail
