// `gpusweep merge`: imports shard databases (from `run --shard` or a launch's
// run folder) into one database, idempotently.
#include "cli/cli.hpp"
#include "cluster/run_dir.hpp"
#include "support/error.hpp"

#include <gpusweep/db/shards.hpp>
#include <gpusweep/db/store.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

int run_merge(const po::variables_map& vm) {
  if (vm.count("inputs") == 0U) {
    throw UsageError(
        "gpusweep merge: name the run folders or shard databases to merge (see: "
        "gpusweep merge --help)");
  }
  std::vector<std::string> shards;
  std::string db_path = vm["db"].as<std::string>();
  bool db_from_run_dir = false;
  for (const auto& in : vm["inputs"].as<std::vector<std::string>>()) {
    if (fs::is_directory(in)) {
      const auto files = shard_files(in);
      if (files.empty()) std::cout << "no shard databases in " << in << "/shards yet\n";
      shards.insert(shards.end(), files.begin(), files.end());
      const fs::path info = fs::path(in) / "launch.json";
      if (vm["db"].defaulted() && !db_from_run_dir && fs::exists(info)) {
        std::ifstream f(info);
        const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("db") && j["db"].is_string()) {
          db_path = j["db"].get<std::string>();
          db_from_run_dir = true;
        }
      }
    } else if (fs::exists(in)) {
      shards.push_back(in);
    } else {
      throw UsageError("gpusweep merge: '" + in + "' does not exist; pass a launch run folder " +
                       "or a shard database");
    }
  }
  db::Store store(db_path, db::Connection::Mode::read_write);
  int64_t imported = 0, already = 0, unfinished = 0;
  for (const auto& shard : shards) {
    std::vector<db::MergeResult> results;
    try {
      results = db::merge_shard(store, shard, vm["allow-plugin-change"].as<bool>());
    } catch (const db::DbError& e) {
      throw UsageError(std::string("gpusweep merge: ") + e.what() +
                       " (shards merged before it are kept; fix or leave out that file)");
    }
    for (const auto& r : results) {
      print_merge(r, std::cout);
      imported += r.imported;
      already += r.already;
      unfinished += r.unfinished;
    }
  }
  std::cout << "merged " << shards.size() << " shard database" << (shards.size() == 1 ? "" : "s")
            << " into " << db_path << ": " << imported << " trials imported, " << already
            << " already there";
  if (unfinished > 0) {
    std::cout << ", " << unfinished
              << " unfinished (re-run their shards to finish them, then merge again)";
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

CommandDef cmd_merge() {
  return {"merge",
          "import shard databases (run --shard, launch) into one",
          "Imports shard databases (written by `gpusweep run --shard i/n`, by hand or as the\n"
          "tasks of `gpusweep launch`) into one database: the shards of a run become one run\n"
          "there. A run folder stands for all its shards/*.db, and its database (from\n"
          "launch.json) is the default --db. Merging again changes nothing; a shard still\n"
          "running gives only its finished trials.",
          "cluster.md",
          {texts("inputs", "RUN_DIR|SHARD.db", "launch run folders and shard databases"),
           db_option(), allow_plugin_change_option()},
          {"inputs"},
          {},
          run_merge};
}

}  // namespace gpusweep::host
