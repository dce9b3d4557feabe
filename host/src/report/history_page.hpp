// `gpusweep history --html` and serve's /api/history: the series of a
// workload's runs as one self-contained HTML page (inline SVG, no scripts,
// no network), styled by the report's one stylesheet (report_css()), so
// that serve's report policy allows it by the same hash.
#pragma once

#include "analysis/history.hpp"

#include <string>

namespace gpusweep::host {

// The page: a chart a series (svg data-chart="history-N": each run's
// throughput in time order, a circle of class "mark", with its interval as
// whiskers, each segment's level, a line of class "cp" where a new level
// starts, labelled with its ratio and p, and a triangle of class "env"
// where the build or software changed, its text in a <title>), each with
// its listing table under it. `what` names the workload(s) in the title;
// `sources` the databases read.
std::string history_html(const HistoryResult& result, const std::string& what,
                         const std::string& sources);

}  // namespace gpusweep::host
