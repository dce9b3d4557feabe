// Run folders; see run_dir.hpp.
#include "cluster/run_dir.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <climits>
#include <deque>
#include <filesystem>
#include <fstream>

namespace gpusweep::host {

namespace fs = std::filesystem;

std::vector<std::string> shard_files(const std::string& dir) {
  const fs::path shards = fs::path(dir) / "shards";
  if (!fs::is_directory(shards)) {
    throw UsageError("'" + dir + "' is a folder but not a launch run folder (no shards/ in it); " +
                     "pass the run folder `gpusweep launch` printed, or the shard databases");
  }
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& e : fs::directory_iterator(shards)) {
    const std::string name = e.path().filename().string();
    // shard-I.db, not its -wal and -shm companions
    if (!e.is_regular_file() || name.rfind("shard-", 0) != 0 || e.path().extension() != ".db") {
      continue;
    }
    const std::string number = name.substr(6, name.size() - 9);
    const bool numeric = !number.empty() && number.size() < 10 &&
                         std::all_of(number.begin(), number.end(), ::isdigit);
    found.emplace_back(numeric ? std::stoll(number) : INT64_MAX, e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [n, path] : found) out.push_back(std::move(path));
  return out;
}

void print_merge(const db::MergeResult& r, std::ostream& out) {
  out << "shard " << r.shard_index << "/" << r.shard_count << " of '" << r.sweep << "' from "
      << r.source << ": " << r.imported << " trial" << (r.imported == 1 ? "" : "s") << " imported, "
      << r.already << " already merged";
  if (r.unfinished > 0) out << ", " << r.unfinished << " unfinished (not imported)";
  out << " -> run " << r.into_sweep_id << (r.run_finished ? " (finished)" : "") << "\n";
}

std::string tail_lines(const std::string& path, size_t lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(std::move(line));
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += l + "\n";
  return out;
}

}  // namespace gpusweep::host
