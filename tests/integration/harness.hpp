// Helpers for integration tests: a temporary folder, running the real
// gpusweep binary, and reading its database with SQL.
#pragma once

#include <gpusweep/db/sqlite.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace gpusweep::test {

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// The first column of the first row of a query on the database at path:
// as an integer, or as text. The query must return a row.
inline int64_t count_in(const std::string& path, const std::string& sql) {
  db::Connection c(path, db::Connection::Mode::read_only);
  auto st = c.prepare(sql);
  REQUIRE(st.step());
  return st.get_int(0);
}

inline std::string text_in(const std::string& path, const std::string& sql) {
  db::Connection c(path, db::Connection::Mode::read_only);
  auto st = c.prepare(sql);
  REQUIRE(st.step());
  return st.get_text(0);
}

// Runs a shell command; its stdout (add 2>&1 for stderr too) and exit code
// (-1 when it did not exit normally).
inline Result run_shell(const std::string& cmd) {
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Sandbox {
 public:
  Sandbox() {
    char tmpl[] = "/tmp/gpusweep_it_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
  }
  ~Sandbox() { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string db() const { return path("results.db"); }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  // Runs `gpusweep ARGS` in the sandbox with the fixture plugins on the path.
  Result gpusweep(const std::string& args) const {
    return run_shell("cd '" + dir_ + "' && GPUSWEEP_PLUGIN_PATH='" + GPUSWEEP_TEST_PLUGIN_DIR +
                     "' '" + GPUSWEEP_BIN + "' " + args + " 2>&1");
  }

  // Starts `gpusweep ARGS` in the background, output to the file LOG in the
  // sandbox; returns the pid of gpusweep itself (the shell execs it).
  pid_t start(const std::string& args, const std::string& log) const {
    const std::string cmd = "cd '" + dir_ + "' && GPUSWEEP_PLUGIN_PATH='" +
                            GPUSWEEP_TEST_PLUGIN_DIR + "' exec '" + GPUSWEEP_BIN + "' " + args +
                            " > '" + log + "' 2>&1";
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  // Waits for a process from start(): its exit code, or -signal.
  static int wait(pid_t pid) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // True once a host has created the database and its tables: the file
  // appears when SQLite opens it, the tables a moment later (one transaction).
  bool has_tables() const {
    if (!std::filesystem::exists(db())) return false;
    return count("SELECT count(*) FROM sqlite_master WHERE name = 'trials'") == 1;
  }

  int64_t count(const std::string& sql) const;
  std::string text(const std::string& sql) const;

 private:
  std::string dir_;
};

// The same on the sandbox's results.db.
inline int64_t Sandbox::count(const std::string& sql) const { return count_in(db(), sql); }
inline std::string Sandbox::text(const std::string& sql) const { return text_in(db(), sql); }

// A condition on the trial's resolved config, for metric().
inline std::string config_is(const std::string& key, const std::string& value) {
  return "json_extract(t.config_json, '$." + key + "') = " + value;
}

// The condition for a sweep of a single trial.
inline const std::string kOnlyTrial = "1 = 1";

// The latest value of metric `name` (eval or stat) of the trial matching
// `condition`, in the sandbox's database.
inline double metric(const Sandbox& box, const std::string& name, const std::string& condition) {
  return std::stod(
      box.text("SELECT CAST(m.value AS TEXT) FROM metrics m JOIN trials t ON t.id = m.trial_id "
               "WHERE m.name = '" +
               name + "' AND " + condition + " ORDER BY m.at_step DESC LIMIT 1"));
}

// The processes working in dir (their cwd) that are a data-parallel
// trial's ranks > 0 (gpusweep-worker --peer-fd), and all of them.
inline std::vector<pid_t> processes_in(const std::string& dir, bool followers_only) {
  std::vector<pid_t> found;
  const auto want = std::filesystem::weakly_canonical(dir);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path() / "cwd", ec) != want || ec) continue;
    std::string cmdline;
    try {
      std::ifstream in(e.path() / "cmdline");
      cmdline.assign(std::istreambuf_iterator<char>(in), {});
    } catch (const std::exception&) {
      continue;  // it exited while being read
    }
    if (followers_only && cmdline.find(std::string("--peer-fd\0", 10)) == std::string::npos) {
      continue;
    }
    found.push_back(static_cast<pid_t>(std::stol(e.path().filename().string())));
  }
  return found;
}

// Waits up to 60 s for a block measured in run 1 (the live file beside the
// database): the trials are past setup.
inline void await_block(const Sandbox& box) {
  for (int i = 0; i < 6000; ++i) {
    const std::string live = box.read("results.db-live/1.json");
    if (std::regex_search(live, std::regex(R"("throughput":\[[0-9])"))) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("no block measured");
}

// Waits up to 10 s for nothing to run in the sandbox any more.
inline bool none_left(const Sandbox& box) {
  for (int i = 0; i < 1000; ++i) {
    if (processes_in(box.path(""), false).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// `gpusweep ARGS` in the sandbox (the real plugins' path), its stdout alone
// parsed as the JSON document a --format json command prints (progress goes
// to stderr); REQUIREs that it exits 0.
inline nlohmann::json gpusweep_json(const Sandbox& box, const std::string& args) {
  const auto r =
      run_shell("cd '" + box.path("") + "' && '" + GPUSWEEP_BIN + "' " + args + " 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.output);
}

// measure.block_s on a workload with small settings (`base`, a JSON object):
// the trial sizes its blocks, records the steps it chose, and every measured
// block runs them (how long the blocks took is the machine's load's: what
// the sizing chooses is checked on a step of known length, run_test.cpp).
inline void check_blocks_sized_by_time(const std::string& workload, const std::string& base) {
  Sandbox box;
  box.write("b.json", R"({"name": "sized", "workload": ")" + workload + R"(", "base": )" + base +
                          R"(, "measure": {"repeats": 1, "warmup_steps": 1, "block_s": 0.05,
                          "blocks": 5, "timeout_s": 120}})");
  const auto r = box.gpusweep("run b.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const int64_t chosen =
      box.count("SELECT CAST(value AS INTEGER) FROM metrics WHERE name = 'block_steps'");
  INFO("steps per block chosen: " << chosen);
  CHECK(chosen >= 1);
  CHECK(box.count("SELECT count(*) FROM blocks WHERE steps = " + std::to_string(chosen)) == 5);
  CHECK(box.count("SELECT steps_per_block FROM trial_summary") == chosen);
}

}  // namespace gpusweep::test
