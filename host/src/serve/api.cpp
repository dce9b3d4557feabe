// The page and JSON API of `gpusweep serve`; see api.hpp. This file holds
// the served databases (which, and how each is read) and the routes; the
// run list is in api_runs.cpp, one run's details in api_run.cpp, and their
// cache with its cursors and deltas in api_cache.cpp.
#include "serve/api.hpp"

#include "analysis/history.hpp"
#include "report/history_page.hpp"
#include "report/report.hpp"
#include "serve/page.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/sha256.hpp"

#include <gpusweep/db/migrate.hpp>
#include <gpusweep/db/snapshot.hpp>
#include <gpusweep/db/store.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

HttpResponse json_response(const Json& j) { return {200, "application/json", j.dump()}; }

HttpResponse not_found(const std::string& what) {
  return {404, "application/json", Json{{"error", what}}.dump()};
}

// The text between a page's first `open` and the `close` after it.
std::string between(const std::string& html, const std::string& open, const std::string& close) {
  const auto start = html.find(open);
  const auto end = start == std::string::npos ? start : html.find(close, start);
  if (end == std::string::npos) throw std::logic_error("serve's page has no " + open);
  return html.substr(start + open.size(), end - start - open.size());
}

// Replaces the page's `marker` with `text`.
void fill(std::string& html, const std::string& marker, const std::string& text) {
  const auto at = html.find(marker);
  if (at != std::string::npos) html.replace(at, marker.size(), text);
}

// A run's progress bar as the page's script draws it (progressBar): SVG,
// whose widths are attributes, since the policy allows no style attribute.
std::string progress_bar(const Json& r) {
  const double total = std::max<double>(1, r["total"].get<double>()), w = 220;
  std::string svg =
      "<svg class=\"bar\" width=\"220\" height=\"12\" viewBox=\"0 0 220 12\">"
      "<rect class=\"track\" width=\"220\" height=\"12\" rx=\"3\"/>";
  double x = 0;
  for (const char* part : {"ok", "failed", "running"}) {
    const double width = w * r[part].get<double>() / total;
    svg += std::string("<rect class=\"") + part + "\" x=\"" + fixed(x, 1) + "\" width=\"" +
           fixed(width, 1) + "\" height=\"12\"/>";
    x += width;
  }
  return svg + "</svg>";
}

// Text as a URL's query value: every byte but the unreserved ones as %XX.
std::string query_value(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// The run list's rows as the page's script draws them (renderRuns), for the
// page's first paint: a reader without JavaScript, or a screenshot taken
// before the first refresh, sees the runs.
std::string runs_rows(const Json& list) {
  std::string rows;
  for (const auto& r : list["runs"]) {
    const std::string db = std::to_string(r["db"].get<int64_t>());
    const std::string id = std::to_string(r["id"].get<int64_t>());
    const std::string status = r["status"].get<std::string>();
    auto cell = [](const std::string& text, const char* cls = nullptr) {
      return std::string("<td") + (cls ? std::string(" class=\"") + cls + "\"" : "") + ">" +
             html_escape(text) + "</td>";
    };
    rows += "<tr class=\"run\" data-run=\"" + db + ":" + id + "\">" +
            cell("run " + id + (db == "0" ? "" : " (db " + db + ")")) +
            cell(r["name"].get<std::string>()) + cell(r["kind"].get<std::string>()) + cell(status) +
            "<td>" + progress_bar(r) + "</td>" +
            cell(std::to_string(r["finished"].get<int64_t>()) + " / " +
                     std::to_string(r["running"].get<int64_t>()) + " / " +
                     std::to_string(r["failed"].get<int64_t>()) + " of " +
                     std::to_string(r["total"].get<int64_t>()),
                 "num progress") +
            cell(status == "running" ? r["eta_text"].get<std::string>() : "-", "num eta") +
            (status == "running"
                 ? std::string("<td></td>")
                 : "<td><a href=\"/api/report?db=" + db + "&amp;id=" + id + "\">report</a></td>") +
            "<td><a href=\"/api/history?db=" + db +
            "&amp;workload=" + html_escape(query_value(r["workload"].get<std::string>())) + "\">" +
            html_escape(r["workload"].get<std::string>()) + "</a></td></tr>";
  }
  return rows;
}

// The state line of the first paint: when the list was read, and the
// databases waited for or unreadable.
std::string state_text(const Json& list) {
  std::string text = "listed at " + utc_now().substr(11, 8) + " UTC";
  for (const auto& w : list["waiting"]) {
    text += "; waiting for DB " + w.get<std::string>() + " to appear";
  }
  for (const auto& u : list["unreadable"]) {
    text += "; db " + std::to_string(u["db"].get<int64_t>()) + " (" + u["path"].get<std::string>() +
            ") unreadable: " + u["error"].get<std::string>();
  }
  return text;
}

// The page, with the run list drawn in, under a policy that runs its one
// inline script and applies its one stylesheet by hash (nothing else: an
// injected <script>, handler or style attribute does nothing), and allows
// requests to this server and frames of its own.
HttpResponse page(const Json& list) {
  static const std::string csp = [] {
    const std::string& html = serve_files().at(0).text;
    return "default-src 'none'; script-src " + csp_hash(between(html, "<script>", "</script>")) +
           "; style-src " + csp_hash(between(html, "<style>", "</style>")) +
           "; connect-src 'self'; img-src data:; frame-src 'self'; frame-ancestors 'self'";
  }();
  std::string html = serve_files().at(0).text;
  fill(html, "<!--state-->", html_escape(state_text(list)));
  fill(html, "<!--runs-->", runs_rows(list));
  HttpResponse out{200, "text/html; charset=utf-8", std::move(html)};
  out.headers.emplace_back("Content-Security-Policy", csp);
  return out;
}

// A run's report, under a policy that applies its one stylesheet by hash
// and runs nothing (it has no script): in serve's frame or opened alone, it
// looks as `report --html`'s file does.
HttpResponse report_page(std::string html) {
  static const std::string csp = "default-src 'none'; style-src " + csp_hash(report_css()) +
                                 "; img-src data:; frame-ancestors 'self'";
  HttpResponse out{200, "text/html; charset=utf-8", std::move(html)};
  out.headers.emplace_back("Content-Security-Policy", csp);
  return out;
}

}  // namespace

// A cursor names the server that gave it: one from an earlier server (the
// page outlived a restart) gets a whole answer, not a wrong delta.
ServeApi::ServeApi(std::vector<std::string> db_paths, double share_s, Snapshot snapshot,
                   std::vector<std::string> folders)
    : share_s_(share_s), snapshot_(snapshot), folders_(std::move(folders)) {
  std::random_device random;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", random(), random());
  generation_ = text;
  std::lock_guard<std::mutex> lock(dbs_mu_);
  for (const auto& path : db_paths) add(path);
}

std::vector<std::string> ServeApi::databases_in(const std::string& folder) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type;
    if (it->is_regular_file(type) && it->path().extension() == ".db") {
      found.push_back(it->path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> ServeApi::databases_given(const std::vector<std::string>& given,
                                                   std::vector<std::string>* folders) {
  std::vector<std::string> out;
  for (const auto& g : given) {
    namespace fs = std::filesystem;
    if (fs::is_directory(g)) {
      const auto found = databases_in(g);
      out.insert(out.end(), found.begin(), found.end());
      folders->push_back(g);
    } else if (fs::exists(g)) {
      out.push_back(g);
    } else {
      // Not there yet (serve opened before the first run): watched, and
      // served once it appears, as a database or a folder of them.
      folders->push_back(g);
    }
  }
  return out;
}

ServeApi::Snapshot ServeApi::snapshot_mode(const std::string& text) {
  if (text == "auto") return Snapshot::automatic;
  if (text == "always") return Snapshot::always;
  if (text == "never") return Snapshot::never;
  throw UsageError("--snapshot " + text + ": use auto, always or never");
}

void ServeApi::add(const std::string& path) const {
  auto entry = std::make_shared<Served>();
  entry->path = path;
  const auto fs = db::network_filesystem(path);
  // The schema it was written with, read in place only where SQLite may
  // open it (a network filesystem's database is read through copies anyway).
  int version = 0;
  if (!fs) {
    try {
      db::Connection c(path, db::Connection::Mode::read_only);
      version = db::current_version(c);
    } catch (const std::exception&) {
      version = 0;  // not readable yet: the requests say why
    }
  }
  const bool older = version > 0 && version < db::schema_version();
  const std::string every = ", made again when it changed, at most every " +
                            std::to_string(static_cast<int>(kSnapshotIntervalS)) + " s)";
  if (older) {
    entry->why = "(written by an older gpusweep, schema " + std::to_string(version) + " of " +
                 std::to_string(db::schema_version()) +
                 ": read through an upgraded local copy, the file left as it is" + every;
  } else if (snapshot_ == Snapshot::always || (snapshot_ == Snapshot::automatic && fs)) {
    entry->why = std::string(fs ? "(on " + *fs : "(--snapshot always") +
                 ": read through local copies" + every;
  }
  if (!entry->why.empty()) {
    entry->snapshots = std::make_shared<db::Snapshots>(path, kSnapshotIntervalS);
  }
  dbs_.push_back(std::move(entry));
}

void ServeApi::rescan() const {
  for (const auto& watched : folders_) {
    std::error_code ec;
    const std::vector<std::string> found = std::filesystem::is_regular_file(watched, ec)
                                               ? std::vector<std::string>{watched}
                                               : databases_in(watched);
    for (const auto& path : found) {
      std::lock_guard<std::mutex> lock(dbs_mu_);
      const bool known =
          std::any_of(dbs_.begin(), dbs_.end(), [&](const auto& d) { return d->path == path; });
      if (!known) add(path);
    }
  }
}

std::vector<std::string> ServeApi::waiting() const {
  std::vector<std::string> out;
  for (const auto& watched : folders_) {
    std::error_code ec;
    if (!std::filesystem::exists(watched, ec)) out.push_back(watched);
  }
  return out;
}

size_t ServeApi::databases() const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  return dbs_.size();
}

std::shared_ptr<const ServeApi::Served> ServeApi::served(size_t d) const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  return d < dbs_.size() ? dbs_[d] : nullptr;
}

std::string ServeApi::path(size_t d) const { return served(d)->path; }

std::string ServeApi::reading(size_t d) const { return served(d)->why; }

int64_t ServeApi::copies(size_t d) const {
  const auto s = served(d);
  return s->snapshots ? s->snapshots->copies() : 0;
}

std::vector<std::string> ServeApi::copy_folders() const {
  std::lock_guard<std::mutex> lock(dbs_mu_);
  std::vector<std::string> out;
  for (const auto& d : dbs_) {
    if (d->snapshots) out.push_back(d->snapshots->folder());
  }
  return out;
}

std::shared_ptr<const std::string> ServeApi::readable(size_t d) const {
  const auto s = served(d);
  if (!s) return nullptr;
  if (s->snapshots) return s->snapshots->current();
  return {s, &s->path};  // shares the entry's life
}

HttpResponse ServeApi::handle(const HttpRequest& request) const {
  const auto& q = request.query;
  auto number = [&](const char* key) -> std::optional<int64_t> {
    const auto it = q.find(key);
    if (it == q.end() || it->second.empty() || it->second.size() > 18 ||
        !std::all_of(it->second.begin(), it->second.end(), ::isdigit)) {
      return std::nullopt;
    }
    return std::stoll(it->second);
  };
  if (request.path == "/" || request.path == "/index.html") return page(runs(""));
  if (request.path == "/api/runs") {
    const auto it = q.find("since");
    return json_response(runs(it == q.end() ? "" : it->second));
  }
  if (request.path == "/api/history") {
    const auto d = number("db");
    const auto workload = q.find("workload");
    const size_t count = databases();
    if (!d || static_cast<size_t>(*d) >= count || workload == q.end() || workload->second.empty() ||
        workload->second.size() > kMaxWorkloadName) {
      return not_found(count == 0 ? std::string("no database yet")
                                  : "give db (0.." + std::to_string(count - 1) +
                                        ") as a number and a workload by name");
    }
    return history(static_cast<size_t>(*d), workload->second);
  }
  if (request.path == "/api/run" || request.path == "/api/report") {
    const auto d = number("db");
    const auto id = number("id");
    const size_t count = databases();
    if (!d || !id || static_cast<size_t>(*d) >= count) {
      return not_found(count == 0 ? std::string("no database yet")
                                  : "no such run: give db (0.." + std::to_string(count - 1) +
                                        ") and id as numbers");
    }
    if (request.path == "/api/run") {
      const auto since = q.find("since");
      const auto body =
          cached_run(static_cast<size_t>(*d), *id, since == q.end() ? "" : since->second);
      if (!body) return not_found("no run " + std::to_string(*id));
      return {200, "application/json", *body};
    }
    const auto file = readable(static_cast<size_t>(*d));
    db::Store store(*file, db::Connection::Mode::read_only);
    const auto sweep = store.sweep(*id);
    if (!sweep) return not_found("no run " + std::to_string(*id));
    return report_page(render_report(store, *sweep));
  }
  return not_found("no such page: " + request.path);
}

HttpResponse ServeApi::history(size_t d, const std::string& workload) const {
  const auto file = readable(d);
  db::Store store(*file, db::Connection::Mode::read_only);
  HistoryFilter filter;
  filter.workload = workload;
  const std::string source = path(d);
  const HistoryResult result = history_series(read_history(store, source, workload), filter);
  return report_page(
      history_html(result, workload, "db " + std::to_string(d) + " (" + source + ")"));
}

}  // namespace gpusweep::host
