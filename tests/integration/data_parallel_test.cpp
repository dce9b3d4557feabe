// Data-parallel trials on this CPU with Gloo: two ranks with batch B train
// the model one process trains with batch 2B (DDP's semantics: each rank's
// slice of the global batch, gradients averaged), the trial records the
// global samples and which rank was slowest, and a workload that does not
// shard its data is skipped with the reason.
#include "harness.hpp"

#include <signal.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::Contains;
using gpusweep::test::await_block;
using gpusweep::test::config_is;
using gpusweep::test::none_left;
using gpusweep::test::processes_in;
using gpusweep::test::Sandbox;

namespace {

// One sweep file for `workload` with `base` settings at world_size w and
// batch_size b: 50 measured steps, loss read every step.
std::string sweep(const std::string& workload, const std::string& base, int w, int b) {
  return R"({"name": "dp", "workload": ")" + workload + R"(",
    "base": {"device": "cpu", "threads": 1, "seed": 3, "world_size": )" +
         std::to_string(w) + R"(, "batch_size": )" + std::to_string(b) + ", " + base + R"(},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5,
                "timeout_s": 300, "min_block_s": 0}})";
}

// Where training ends after 50 steps at world_size 1 x batch 2b and at
// world_size 2 x batch b: the same parameters' norm and validation loss
// (or quality) within 1e-5. (last_loss is each rank's own: rank 0's batch
// is half the global one, so it is not compared.)
void check_equivalent(const std::string& workload, const std::string& base, int b,
                      const std::string& quality) {
  Sandbox box;
  box.write("one.json", sweep(workload, base, 1, 2 * b));
  box.write("two.json", sweep(workload, base, 2, b));
  for (const char* f : {"one.json", "two.json"}) {
    const auto r = box.gpusweep(std::string("run ") + f + " --db results.db");
    INFO(r.output);
    REQUIRE(r.code == 0);
  }
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  const std::string one = config_is("world_size", "1"), two = config_is("world_size", "2");
  for (const std::string& name : {std::string("param_norm"), quality}) {
    const double a = metric(box, name, one), c = metric(box, name, two);
    INFO(workload << " " << name << ": world_size 1 x " << 2 * b << " " << a << ", world_size 2 x "
                  << b << " " << c);
    CHECK(std::abs(a - c) <= 1e-5 * std::max(1.0, std::abs(a)));
  }
  // The trial counts the global batch, and the two ranks took the 50 steps
  // together: every run of steps had a slowest rank.
  const auto per_step = [&](const std::string& condition) {
    return box.text(
        "SELECT CAST(s.samples_per_step AS TEXT) FROM trial_summary s JOIN trials t "
        "ON t.id = s.trial_id WHERE " +
        condition);
  };
  CHECK(per_step(two) == per_step(one));
  CHECK(metric(box, "dp_world_size", two) == 2);
  CHECK(metric(box, "dp_rank0_slowest_blocks", two) + metric(box, "dp_rank1_slowest_blocks", two) ==
        5);
  CHECK(metric(box, "dp_comm_share", two) > 0);
  CHECK(metric(box, "dp_comm_share", two) < 1);
  // Each rank's wait in every measured step: step by step the least is the
  // communication, the ranks' mean above it the imbalance; together they
  // are the ranks' mean total (every step after warmup is measured here),
  // and the communication is at most the least total.
  CHECK(metric(box, "dp_imbalance_share", two) >= 0);
  CHECK(metric(box, "dp_comm_steps", two) == 50);
  const double rank0 = metric(box, "dp_rank0_comm_exposed_s", two);
  const double rank1 = metric(box, "dp_rank1_comm_exposed_s", two);
  const double comm = metric(box, "dp_comm_exposed_measured_s", two);
  CHECK(comm + metric(box, "dp_imbalance_s", two) == Approx((rank0 + rank1) / 2).epsilon(1e-6));
  CHECK(comm <= std::min(rank0, rank1) * (1 + 1e-9));
  CHECK(metric(box, "dp_allreduce_bytes_per_step", two) > 0);
  CHECK(metric(box, "dp_synced_steps", two) == 50);
  CHECK(metric(box, "dp_buckets", two) >= 1);
}

}  // namespace

TEST_CASE("timeseries at world_size 2 x batch B trains as world_size 1 x batch 2B",
          "[integration][torch][serial]") {
  check_equivalent("timeseries", R"("hidden_size": 16, "num_layers": 1, "seq_len": 12)", 16,
                   "val_mae");
}

TEST_CASE("restoration at world_size 2 x batch B trains as world_size 1 x batch 2B",
          "[integration][torch][serial]") {
  check_equivalent("restoration", R"("base_channels": 8, "num_blocks": 1, "patch_size": 16)", 4,
                   "psnr_db");
}

TEST_CASE("transformer at world_size 2 x batch B trains as world_size 1 x batch 2B",
          "[integration][torch][serial]") {
  check_equivalent("transformer", R"("d_model": 32, "n_layers": 1, "n_heads": 2, "seq_len": 16)", 4,
                   "val_loss");
}

TEST_CASE("grad_accum at world_size 2 accumulates locally and all-reduces once a step",
          "[integration][torch][serial]") {
  // 2 micro-batches a step: the first's backward is DDP's no_sync, so 50
  // steps reduce 50 times (check_equivalent), not 100, and still train as
  // one process with the global batch does.
  check_equivalent("transformer",
                   R"("d_model": 32, "n_layers": 1, "n_heads": 2, "seq_len": 16, "grad_accum": 2)",
                   4, "val_loss");
}

TEST_CASE("many small buckets and the static graph train as one process does",
          "[integration][torch][serial]") {
  // 1 KiB buckets: restoration's 6 KiB of gradients all-reduce in several
  // launches, each as its gradients are ready. The static graph's first step
  // reduces only when told to at its end (DDP's delay_all_reduce): without
  // that, the ranks trained apart and this failed by 2e-4 in the norm.
  check_equivalent(
      "restoration",
      R"("base_channels": 8, "num_blocks": 1, "patch_size": 16, "dp_bucket_mb": 0.001, "dp_static_graph": true)",
      4, "psnr_db");
  Sandbox box;
  box.write("b.json", sweep("restoration",
                            R"("base_channels": 8, "num_blocks": 1, "patch_size": 16,
                               "dp_bucket_mb": 0.001)",
                            2, 4));
  REQUIRE(box.gpusweep("run b.json --db results.db").code == 0);
  CHECK(metric(box, "dp_buckets", config_is("world_size", "2")) > 1);
  // The static graph and local accumulation do not mix: skipped, with why.
  box.write("s.json", sweep("restoration",
                            R"("base_channels": 8, "num_blocks": 1, "patch_size": 16,
                               "dp_static_graph": true, "grad_accum": 2)",
                            2, 4));
  REQUIRE(box.gpusweep("run s.json --db results.db").code == 0);
  CHECK_THAT(box.text("SELECT error FROM trials WHERE status = 'skipped'"),
             Contains("dp_static_graph with grad_accum > 1"));
}

TEST_CASE("a workload that does not shard its data is skipped at world_size 2, with the reason",
          "[integration][torch][serial]") {
  Sandbox box;
  box.write("d.json", R"({"name": "dp", "workload": "dqn",
    "base": {"device": "cpu", "threads": 1, "world_size": 2},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run d.json --db results.db");
  INFO(r.output);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'skipped'") == 1);
  CHECK_THAT(box.text("SELECT error FROM trials"), Contains("world_size > 1"));
}

namespace {

// Waits up to 60 s for a rank > 0 to run in the sandbox, looking every
// poll_ms; its pid.
pid_t await_follower(const Sandbox& box, int poll_ms = 10) {
  for (int waited = 0; waited < 60000; waited += poll_ms) {
    const auto f = processes_in(box.path(""), true);
    if (!f.empty()) return f.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  FAIL("no rank > 0 started");
  return -1;
}

// Starts `run FILE` in the sandbox, its workers given the ranks' timeout
// dp_timeout (GPUSWEEP_DP_TIMEOUT_S) when not null; the host's pid.
pid_t start_run(const Sandbox& box, const std::string& file, const char* dp_timeout = nullptr) {
  if (dp_timeout != nullptr) ::setenv("GPUSWEEP_DP_TIMEOUT_S", dp_timeout, 1);
  const pid_t host = box.start("run " + file + " --db results.db --jobs 1", "log.txt");
  ::unsetenv("GPUSWEEP_DP_TIMEOUT_S");
  return host;
}

// Two world-size-2 timeseries trials of 400 steps each, one after the
// other (no turns: one trial's ranks alive at a time): long enough to be
// caught mid-run, short enough that the one left alone ends well within
// timeout_s on a machine that builds LibTorch beside the suite (1,000 steps
// took past 8 s there).
const char* kLongSweep = R"({"name": "dp", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "world_size": 2, "hidden_size": 32, "seq_len": 30},
    "grid": {"batch_size": [16, 32]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 80, "blocks": 5,
                "timeout_s": 8, "min_block_s": 0, "interleave": 1}})";

// Starts kLongSweep and returns once a rank > 0 runs and a block was
// measured: {the host, that rank}.
std::pair<pid_t, pid_t> start_mid_trial(const Sandbox& box, const char* dp_timeout = nullptr) {
  const pid_t host = start_run(box, "t.json", dp_timeout);
  const pid_t follower = await_follower(box);
  await_block(box);
  return {host, follower};
}

// The rendezvous folder of a running rank (its FileStore's folder, from its
// environment).
std::string rendezvous_folder(pid_t rank) {
  std::ifstream environ("/proc/" + std::to_string(rank) + "/environ");
  std::string store;
  for (std::string var; std::getline(environ, var, '\0');) {
    if (var.rfind("GPUSWEEP_DP_STORE=", 0) == 0) store = var.substr(18);
  }
  REQUIRE_FALSE(store.empty());
  return std::filesystem::path(store).parent_path();
}

}  // namespace

TEST_CASE("a rank that dies ends its data-parallel trial, recorded once with the rank and why",
          "[integration][torch][faults][serial]") {
  Sandbox box;
  box.write("t.json", kLongSweep);
  const auto [host, follower] = start_mid_trial(box);
  // Mid-trial, past setup: the rendezvous' store is still there (a later
  // communicator or NCCL's dump on a timeout opens it again).
  const std::string folder = rendezvous_folder(follower);
  CHECK(std::filesystem::exists(folder));
  REQUIRE(::kill(follower, SIGKILL) == 0);
  CHECK(Sandbox::wait(host) == 0);               // a crashed trial is a result
  CHECK_FALSE(std::filesystem::exists(folder));  // end_ranks removed it
  INFO(box.read("log.txt"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'crashed'") == 1);
  CHECK_THAT(box.text("SELECT error FROM trials WHERE status = 'crashed'"),
             Contains("rank 1 of 2 was killed by signal 9") && Contains("(during measure)"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 1);  // the other one
  CHECK(none_left(box));
}

TEST_CASE("a rank that hangs ends its data-parallel trial at timeout_s, no rank nor folder left",
          "[integration][torch][faults][serial]") {
  Sandbox box;
  box.write("t.json", kLongSweep);
  const auto [host, follower] = start_mid_trial(box);
  const std::string folder = rendezvous_folder(follower);
  CHECK(std::filesystem::exists(folder));
  REQUIRE(::kill(follower, SIGSTOP) == 0);  // frozen: the other rank waits in its all-reduce
  CHECK(Sandbox::wait(host) == 0);
  // The host killed the leader at timeout_s (it never reached end_ranks)
  // and removed its rendezvous folder after reaping it.
  CHECK_FALSE(std::filesystem::exists(folder));
  INFO(box.read("log.txt"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'timeout'") == 1);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 1);
  CHECK(none_left(box));
}

TEST_CASE("a host killed during a data-parallel trial leaves no rank behind, and resume completes",
          "[integration][torch][faults][kill][serial]") {
  Sandbox box;
  box.write("t.json", kLongSweep);
  const pid_t host = start_mid_trial(box).first;
  REQUIRE(::kill(host, SIGKILL) == 0);
  Sandbox::wait(host);
  CHECK(none_left(box));  // each rank died with its parent (PR_SET_PDEATHSIG)
  const auto r = box.gpusweep("run t.json --db results.db --resume");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(DISTINCT config_hash) FROM trials") == 2);
  CHECK(box.count("SELECT count(*) FROM blocks") == 10);
  CHECK(none_left(box));
}

TEST_CASE("a sweep over world_size: compare reports scaling efficiency and communication share",
          "[integration][torch][serial]") {
  Sandbox box;
  box.write("s.json", R"({"name": "scale", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 16, "seq_len": 12, "batch_size": 32},
    "grid": {"world_size": [1, 2]},
    "measure": {"repeats": 2, "warmup_steps": 2, "steps_per_block": 10, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto table = box.gpusweep("compare --db results.db");
  INFO(table.output);
  CHECK_THAT(table.output, Contains("data-parallel scaling") && Contains("efficiency"));
  const auto json = box.gpusweep("compare --db results.db --scaling --format json");
  INFO(json.output);
  REQUIRE(json.code == 0);
  const auto rows = nlohmann::json::parse(json.output);
  REQUIRE(rows.size() == 1);
  const auto& row = rows[0];
  CHECK(row["world_size"] == 2);
  CHECK(row["single_config"] == 1);
  CHECK(row["repeats_paired"] == 2);
  // Global throughput over one process's, per rank: positive, with an
  // interval around it; the all-reduce is a real share of a block.
  const double e = row["efficiency"].get<double>();
  CHECK(e > 0);
  CHECK(row["efficiency_low"].get<double>() < e);
  CHECK(row["efficiency_high"].get<double>() > e);
  CHECK(row["efficiency"].get<double>() == Approx(row["speedup"].get<double>() / 2).epsilon(1e-12));
  CHECK(row["comm_share"].get<double>() > 0);
  CHECK(row["comm_share"].get<double>() < 1);
  CHECK(row["allreduce_bytes_per_step"].get<double>() > 0);
  // The report plots it: speed-up against world_size with the ideal line.
  const auto report = box.gpusweep("report --db results.db --html r.html");
  INFO(report.output);
  REQUIRE(report.code == 0);
  const std::string html = box.read("r.html");
  CHECK_THAT(html, Contains("<h2>Data-parallel scaling</h2>") &&
                       Contains("data-chart=\"scaling\"") && Contains("class=\"ideal\"") &&
                       Contains("class=\"whisker\""));
  // No config of one rank only: the option says what to sweep.
  box.write("one.json", R"({"name": "one", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 16, "seq_len": 12},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run one.json --db results.db").code == 0);
  const auto none = box.gpusweep("compare --db results.db --sweep one --scaling");
  CHECK(none.code == 2);
  CHECK_THAT(none.output, Contains("no config with world_size > 1"));
}

TEST_CASE("a rank out of memory ends its data-parallel trial as oom, naming the rank",
          "[integration][torch][faults][serial]") {
  // measure.max_memory caps every rank's process (here its address space):
  // batch 64 of 128x128 patches does not fit 600 MiB in either, and whichever
  // rank fails first ends the trial for both, as oom, named.
  Sandbox box;
  box.write("o.json", R"({"name": "oom", "workload": "restoration",
    "base": {"device": "cpu", "threads": 1, "world_size": 2, "batch_size": 64, "patch_size": 128},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 1, "blocks": 5,
                "timeout_s": 120, "max_memory": "600MiB"}})");
  const auto r = box.gpusweep("run o.json --db results.db");
  INFO(r.output);
  CHECK(r.code == 3);  // its only trial failed, and run's exit status says so
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'oom'") == 1);
  CHECK_THAT(box.text("SELECT error FROM trials"),
             Contains(" of 2") && Contains("can't allocate memory"));
  CHECK(none_left(box));
}

TEST_CASE("a rendezvous that does not complete fails the trial after its timeout, saying so",
          "[integration][torch][faults][serial]") {
  // Rank 1 frozen as it starts (before its plugin has even loaded): rank 0
  // waits in the rendezvous for GPUSWEEP_DP_TIMEOUT_S, then fails the trial
  // with what it waited for, and no rank is left.
  Sandbox box;
  box.write("r.json", R"({"name": "meet", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "world_size": 2, "hidden_size": 16, "seq_len": 12},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 60, "min_block_s": 0}})");
  const pid_t host = start_run(box, "r.json", "3");
  const pid_t follower = await_follower(box, /*poll_ms=*/1);
  REQUIRE(::kill(follower, SIGSTOP) == 0);
  CHECK(Sandbox::wait(host) == 3);  // its only trial failed: run's exit status
  INFO(box.read("log.txt"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'failed'") == 1);
  CHECK_THAT(box.text("SELECT error FROM trials"),
             Contains("data-parallel rendezvous (rank 0 of 2, gloo") &&
                 Contains("after waiting up to 3 s for the other ranks") &&
                 Contains("(during setup)") && !Contains("frame #"));
  CHECK(none_left(box));
}

TEST_CASE("a rank stuck past the ranks' timeout fails the trial, naming the stuck rank",
          "[integration][torch][faults][serial]") {
  // Rank 1 stopped mid-trial with GPUSWEEP_DP_TIMEOUT_S at 2 s and the
  // trial's timeout_s far off: rank 0's all-reduce (or its wait for rank
  // 1's reply) gives up after 2 s, and the trial says which rank was stuck.
  Sandbox box;
  std::string sweep_text = kLongSweep;
  sweep_text.replace(sweep_text.find("\"timeout_s\": 8"), 14, "\"timeout_s\": 60");
  box.write("t.json", sweep_text);
  const auto [host, follower] = start_mid_trial(box, "2");
  REQUIRE(::kill(follower, SIGSTOP) == 0);
  CHECK(Sandbox::wait(host) == 0);  // the other trial ran ok
  INFO(box.read("log.txt"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'failed'") == 1);
  CHECK_THAT(box.text("SELECT error FROM trials WHERE status = 'failed'"),
             Contains("rank 1 is stopped") || Contains("rank 1 of 2 did not answer"));
  CHECK(none_left(box));
}

namespace {

// `gpusweep ARGS` in the sandbox with the LibTorch fixtures (dp_spin) on the
// plugin path; its stderr as `err` says (with its output, or dropped).
gpusweep::test::Result with_fixtures(const Sandbox& box, const std::string& args,
                                     const std::string& err = "2>&1") {
  return gpusweep::test::run_shell("cd '" + box.path("") + "' && GPUSWEEP_PLUGIN_PATH='" +
                                   GPUSWEEP_TORCH_FIXTURE_DIR + "' '" + GPUSWEEP_BIN + "' " + args +
                                   " " + err);
}

}  // namespace

TEST_CASE("a straggler that changes every step counts as imbalance, not communication",
          "[integration][torch]") {
  // dp_spin: rank r spins 4 ms longer on the steps whose number modulo 2 is
  // r, so each rank waits about 4 ms for the other in half of its 100
  // measured all-reduces: about 0.2 s of waiting a rank, the all-reduce
  // (5 floats through Gloo on loopback) apart. Step by step the least wait
  // is the all-reduce and the waits are imbalance (each step's mean less its
  // least: about 2 ms, 0.2 s in all); the least of the totals kept every
  // wait as "communication" and found no imbalance (the totals are alike).
  Sandbox box;
  box.write("a.json", R"({"name": "alt", "workload": "dp_spin",
    "base": {"device": "cpu", "world_size": 2, "spin_us": 500, "alternate_us": 4000},
    "measure": {"repeats": 1, "warmup_steps": 4, "steps_per_block": 20, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  const auto r = with_fixtures(box, "run a.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 1);
  const std::string all = "1 = 1";
  CHECK(gpusweep::test::metric(box, "dp_comm_steps", all) == 100);
  const double comm = gpusweep::test::metric(box, "dp_comm_exposed_measured_s", all);
  const double imbalance = gpusweep::test::metric(box, "dp_imbalance_s", all);
  const double rank0 = gpusweep::test::metric(box, "dp_rank0_comm_exposed_s", all);
  const double rank1 = gpusweep::test::metric(box, "dp_rank1_comm_exposed_s", all);
  INFO("communication " << comm << " s, imbalance " << imbalance << " s, rank totals " << rank0
                        << " s and " << rank1 << " s");
  // The waits (at least half the 0.2 s designed) went to imbalance and
  // out of the communication, which is less than each rank's total by them.
  CHECK(imbalance > 0.1);
  CHECK(std::min(rank0, rank1) - comm > 0.1);
  CHECK(comm > 0);
}

TEST_CASE("CPU ranks run one thread each unless told, and scale against one process as wide",
          "[integration][torch]") {
  // threads 0 (the default): each rank one thread, the single process
  // LibTorch's default (every core). compare --scaling then refuses the
  // pair, saying why, where the machine has more than one core; with
  // threads 1 both ran one thread and the pair is compared.
  Sandbox box;
  for (const char* threads : {"0", "1"}) {
    box.write(std::string("t") + threads + ".json", std::string(R"({"name": "t)") + threads +
                                                        R"(", "workload": "dp_spin",
      "base": {"device": "cpu", "spin_us": 1000, "threads": )" +
                                                        threads + R"(},
      "grid": {"world_size": [1, 2]},
      "measure": {"repeats": 2, "warmup_steps": 2, "steps_per_block": 10, "blocks": 5,
                  "timeout_s": 120, "min_block_s": 0}})");
    const auto r = with_fixtures(box, std::string("run t") + threads + ".json --db results.db");
    INFO(r.output);
    REQUIRE(r.code == 0);
  }
  const auto threads_of = [&](const char* sweep, int world) {
    return box.text(
        "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN sweeps s ON "
        "s.id = t.sweep_id WHERE s.name = '" +
        std::string(sweep) +
        "' AND m.name = 'intra_op_threads' AND json_extract(t.config_json, "
        "'$.world_size') = " +
        std::to_string(world) + " LIMIT 1");
  };
  CHECK(std::stod(threads_of("t0", 2)) == 1);
  CHECK(std::stod(threads_of("t1", 2)) == 1);
  CHECK(std::stod(threads_of("t1", 1)) == 1);
  const double single = std::stod(threads_of("t0", 1));
  const auto rows_of = [&](const char* sweep) {
    const auto r = with_fixtures(
        box, std::string("compare --db results.db --scaling --format json --sweep ") + sweep,
        "2>/dev/null");
    INFO(r.output);
    return nlohmann::json::parse(r.output);
  };
  const auto wide = rows_of("t0");
  REQUIRE(wide.size() == 1);
  if (single > 1) {
    CHECK(wide[0]["efficiency"].is_null());
    CHECK_THAT(wide[0]["note"].get<std::string>(),
               Contains("not compared") && Contains("each rank 1") && Contains("threads: 1"));
  }
  const auto narrow = rows_of("t1");
  REQUIRE(narrow.size() == 1);
  CHECK(narrow[0]["efficiency"].is_number());
}
