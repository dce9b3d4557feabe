// `gpusweep serve` against a real sweep: the progress it reports advances
// while the sweep runs, the server is read-only and refuses what it must
// (other methods, paths out of its routes; a request naming another host,
// from another origin or without the printed token), the page's first
// answer lists the runs, a run folder's shards and a database named before
// it exists appear as they are made, and kill -9 of it again and again
// during a sweep leaves the sweep to finish with its database intact.
#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

using namespace gpusweep;
using Catch::Matchers::Contains;
using test::Sandbox;

namespace {

struct Reply {
  int status = 0;
  std::string head;  // the status line and headers
  std::string body;
};

// The token each server started here printed, by port.
std::map<uint16_t, std::string>& tokens() {
  static std::map<uint16_t, std::string> by_port;
  return by_port;
}

// One HTTP/1.0 request to 127.0.0.1:port as is (status 0 when nothing
// answered): headers holds every header but the request line.
Reply raw(uint16_t port, const std::string& target, const std::string& method,
          const std::string& headers) {
  Reply r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string req = method + " " + target + " HTTP/1.0\r\n" + headers +
                          (method == "POST" ? "Content-Length: 2\r\n\r\n{}" : "\r\n");
  REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  std::smatch m;
  if (std::regex_search(text, m, std::regex("^HTTP/1\\.[01] (\\d+)"))) r.status = std::stoi(m[1]);
  const auto body = text.find("\r\n\r\n");
  if (body != std::string::npos) r.body = text.substr(body + 4);
  r.head = text.substr(0, body);
  return r;
}

// The same as a browser on the printed URL sends it: the Host naming the
// server, and the server's token (from its printed URL).
Reply http(uint16_t port, const std::string& target, const std::string& method = "GET",
           const std::string& headers = "") {
  return raw(port, target, method,
             "Host: 127.0.0.1:" + std::to_string(port) + "\r\nAuthorization: Bearer " +
                 tokens()[port] + "\r\n" + headers);
}

// Starts `gpusweep serve ARGS --port 0` and waits for the port it prints.
uint16_t start_server(const Sandbox& box, const std::string& args, const std::string& log,
                      pid_t* pid) {
  *pid = box.start("serve " + args + " --port 0", log);
  for (int i = 0; i < 200; ++i) {
    std::smatch m;
    const std::string out = box.read(log);
    if (std::regex_search(out, m, std::regex(":(\\d+)/\\?token=([0-9a-zA-Z_-]+)"))) {
      const auto port = static_cast<uint16_t>(std::stoi(m[1]));
      tokens()[port] = m[2];
      return port;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL("serve printed no port: " << box.read(log));
  return 0;
}

// A sweep of 12 trials of noop, each about 0.5 s, one after another.
const char* kSlowSweep = R"({"name": "slow", "workload": "noop",
  "base": {"spin_us": 6000},
  "grid": {"batch_size": [1, 2, 3]},
  "measure": {"warmup_steps": 2, "steps_per_block": 10, "blocks": 8, "repeats": 4,
              "interleave": 1}})";

}  // namespace

TEST_CASE("serve shows a running sweep's progress advancing, and kill -9 of it harms nothing",
          "[integration][serve]") {
  Sandbox box;
  box.write("s.json", kSlowSweep);
  // The database exists before the server starts: a first tiny run.
  box.write("first.json", R"({"name": "first", "workload": "noop",
    "measure": {"warmup_steps": 0, "steps_per_block": 2, "blocks": 5, "repeats": 1,
                "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run first.json --db results.db").code == 0);
  const pid_t sweep = box.start("run s.json --db results.db", "sweep.log");
  pid_t server = 0;
  uint16_t port = start_server(box, "--db results.db", "serve.log", &server);
  std::vector<int64_t> finished;
  bool saw_running = false, saw_eta = false;
  int kills = 0;
  for (int i = 0; i < 400; ++i) {
    const Reply r = http(port, "/api/runs");
    if (r.status == 200) {
      const auto j = nlohmann::json::parse(r.body);
      for (const auto& run : j["runs"]) {
        if (run["name"] != "slow") continue;
        if (finished.empty() || run["finished"].get<int64_t>() != finished.back()) {
          finished.push_back(run["finished"].get<int64_t>());
        }
        saw_running = saw_running || run["running"].get<int64_t>() > 0;
        saw_eta = saw_eta || (run["status"] == "running" && run["eta_s"].is_number() &&
                              run["finished"].get<int64_t>() > 0);
      }
      // The run's details answer mid-run too.
      if (i % 10 == 5) {
        const Reply d = http(port, "/api/run?db=0&id=2");
        CHECK(d.status == 200);
      }
    }
    // kill -9 the server now and then (20 times), and start another.
    if (i % 5 == 4 && kills < 20) {
      ::kill(server, SIGKILL);
      Sandbox::wait(server);
      ++kills;
      port =
          start_server(box, "--db results.db", "serve" + std::to_string(kills) + ".log", &server);
    }
    if (::waitpid(sweep, nullptr, WNOHANG) == sweep) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  INFO(box.read("sweep.log"));
  // Progress was seen advancing, with a trial running and an ETA.
  CHECK(finished.size() >= 4);
  CHECK(std::is_sorted(finished.begin(), finished.end()));
  CHECK(saw_running);
  CHECK(saw_eta);
  CHECK(kills == 20);
  // The sweep finished with nothing lost or doubled, the file intact (an
  // answer may be up to ServeApi::kShareS old).
  auto after = nlohmann::json::parse(http(port, "/api/runs").body);
  for (int i = 0; i < 40 && after["runs"][1]["status"] != "finished"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = nlohmann::json::parse(http(port, "/api/runs").body);
  }
  CHECK(after["runs"][1]["status"] == "finished");
  CHECK(after["runs"][1]["finished"] == 12);
  CHECK(box.count("SELECT count(*) FROM trials WHERE sweep_id = 2 AND status = 'ok'") == 12);
  CHECK(box.text("PRAGMA integrity_check") == "ok");
  // A finished run's details: the comparison as compare gives it.
  const auto run = nlohmann::json::parse(http(port, "/api/run?db=0&id=2").body);
  REQUIRE(run["compare"].is_array());
  CHECK(run["compare"].size() == 3);
  CHECK(run["compare"][1]["ci_low"].is_number());
  // The report, from the same renderer as report --html.
  const Reply report = http(port, "/api/report?db=0&id=2");
  CHECK(report.status == 200);
  CHECK_THAT(report.body, Contains("<svg") && Contains("slow"));
  // A cursor that has not moved says so.
  const auto cursor = after["cursor"].get<std::string>();
  CHECK(nlohmann::json::parse(http(port, "/api/runs?since=" + cursor).body)["unchanged"] == true);
  ::kill(server, SIGKILL);
  Sandbox::wait(server);
}

TEST_CASE("serve is read-only, keeps to its routes, and answers only its own page and token",
          "[integration][serve]") {
  Sandbox box;
  // A hostile sweep name: the API carries it as a JSON string (the page puts
  // it in as text: tests/serve/browser_test.py checks that in Chromium).
  box.write("h.json", R"({"name": "<img src=x onerror=alert(1)>", "workload": "noop",
    "base": {"spin_us": 100},
    "grid": {"batch_size": [1, 2]},
    "measure": {"warmup_steps": 0, "steps_per_block": 2, "blocks": 5, "repeats": 1,
                "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run h.json --db results.db").code == 0);
  pid_t server = 0;
  const uint16_t port = start_server(box, "--db results.db", "serve.log", &server);
  const auto runs = nlohmann::json::parse(http(port, "/api/runs").body);
  CHECK(runs["runs"][0]["name"] == "<img src=x onerror=alert(1)>");
  // It gives way to the sweeps beside it: every thread of it at niceness 10
  // (field 19 of /proc/PID/task/TID/stat; Linux keeps niceness per thread).
  int threads = 0;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server) + "/task")) {
    std::ifstream in(task.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
    }
    CHECK(field == "10");
    ++threads;
  }
  CHECK(threads >= 1);
  CHECK(http(port, "/").status == 200);
  CHECK_THAT(http(port, "/").body, Contains("gpusweep serve"));
  // The page's first answer has the run list drawn in, for a reader
  // without JavaScript: the run's row, its name as text.
  CHECK_THAT(http(port, "/").body, Contains("<tr class=\"run\" data-run=\"0:1\"><td>run 1</td>"
                                            "<td>&lt;img src=x onerror=alert(1)&gt;</td>"));
  CHECK_THAT(http(port, "/").body, Contains("2 / 0 / 0 of 2"));
  CHECK(http(port, "/api/runs", "POST").status == 405);
  CHECK(http(port, "/api/runs", "DELETE").status == 405);
  const Reply escape = http(port, "/../../etc/passwd");
  CHECK((escape.status == 400 || escape.status == 404));
  CHECK_THAT(escape.body, !Contains("root:"));
  CHECK(http(port, "/%2e%2e/%2e%2e/etc/passwd").status == 400);
  CHECK(http(port, "/api/run?db=5&id=1").status == 404);
  CHECK(http(port, "/api/run?db=0&id=99").status == 404);
  CHECK(http(port, "/api/run?db=../x&id=1").status == 404);
  CHECK(http(port, "/nothing").status == 404);
  // Other pages and other users: a Host naming another site (a page whose
  // name rebinds to 127.0.0.1) is refused whatever it carries; so is a
  // request without the printed token, or with another.
  const std::string token = tokens()[port];
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  const std::string bearer = "Authorization: Bearer " + token + "\r\n";
  const Reply rebound = raw(port, "/api/runs?token=" + token, "GET",
                            "Host: attacker.example:" + std::to_string(port) + "\r\n");
  CHECK(rebound.status == 403);
  CHECK_THAT(rebound.body, !Contains("<img"));
  CHECK(raw(port, "/api/runs", "GET", "Host: attacker.example\r\n" + bearer).status == 403);
  CHECK(raw(port, "/api/runs", "GET", bearer).status == 403);  // no Host at all
  CHECK(raw(port, "/api/runs", "GET", host).status == 401);
  CHECK(raw(port, "/", "GET", host).status == 401);
  CHECK(raw(port, "/api/runs?token=wrong" + token.substr(5), "GET", host).status == 401);
  CHECK(raw(port, "/api/runs?token=" + token, "GET", host).status == 200);
  CHECK(raw(port, "/api/runs", "GET", host + bearer).status == 200);
  // The page's first load leaves the token in a cookie of this server's,
  // which then serves on its own.
  const Reply page = raw(port, "/?token=" + token, "GET", host);
  CHECK(page.status == 200);
  const std::string cookie = "gpusweep_token_" + std::to_string(port) + "=" + token;
  CHECK_THAT(page.head, Contains("Set-Cookie: " + cookie + "; Path=/; HttpOnly; SameSite=Strict"));
  CHECK(raw(port, "/api/runs", "GET", host + "Cookie: a=b; " + cookie + "\r\n").status == 200);
  CHECK(raw(port, "/api/runs", "GET", host + "Cookie: " + cookie + "x\r\n").status == 401);
  // Another origin's script, or another site's request, reads nothing but
  // the page a link opens.
  CHECK(http(port, "/api/runs", "GET", "Origin: http://attacker.example\r\n").status == 403);
  CHECK(http(port, "/api/runs", "GET", "Origin: null\r\n").status == 403);
  CHECK(http(port, "/api/runs", "GET", "Sec-Fetch-Site: cross-site\r\n").status == 403);
  CHECK(http(port, "/api/runs", "GET", "Sec-Fetch-Site: same-site\r\n").status == 403);
  CHECK(http(port, "/", "GET", "Sec-Fetch-Site: cross-site\r\n").status == 200);
  CHECK(http(port, "/api/runs", "GET",
             "Origin: http://127.0.0.1:" + std::to_string(port) +
                 "\r\nSec-Fetch-Site: same-origin\r\n")
            .status == 200);
  ::kill(server, SIGKILL);
  Sandbox::wait(server);
  // Bound beyond loopback: a token too, and a name of the user's own with
  // --allow-host; the token can come from the environment.
  ::setenv("GPUSWEEP_SERVE_TOKEN", "from-the-environment-0123", 1);
  pid_t open = 0;
  const uint16_t port2 = start_server(
      box, "--db results.db --bind 0.0.0.0 --allow-host gpu-box.lan", "open.log", &open);
  ::unsetenv("GPUSWEEP_SERVE_TOKEN");
  CHECK(tokens()[port2] == "from-the-environment-0123");
  CHECK(http(port2, "/api/runs").status == 200);
  const std::string named = "Host: gpu-box.lan:" + std::to_string(port2) + "\r\n";
  CHECK(raw(port2, "/api/runs", "GET", named).status == 401);
  CHECK(raw(port2, "/api/runs?token=from-the-environment-0123", "GET", named).status == 200);
  CHECK(raw(port2, "/api/runs?token=from-the-environment-0123", "GET",
            "Host: attacker.example:" + std::to_string(port2) + "\r\n")
            .status == 403);
  ::kill(open, SIGKILL);
  Sandbox::wait(open);
  // A run folder served before its first shard exists: the shard appears.
  std::filesystem::create_directories(box.path("run/shards"));
  pid_t folder = 0;
  const uint16_t port3 = start_server(box, "--db run", "folder.log", &folder);
  CHECK(nlohmann::json::parse(http(port3, "/api/runs").body)["runs"].empty());
  std::filesystem::copy_file(box.path("results.db"), box.path("run/shards/shard-0.db"));
  size_t shown = 0;
  for (int i = 0; i < 100 && shown == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    shown = nlohmann::json::parse(http(port3, "/api/runs").body)["runs"].size();
  }
  CHECK(shown == 1);
  ::kill(folder, SIGKILL);
  Sandbox::wait(folder);
  // A database named before it exists (serve opened before the first run)
  // is waited for: the page says so, then lists its runs once it appears.
  pid_t later = 0;
  const uint16_t port4 = start_server(box, "--db later.db", "later.log", &later);
  const auto waiting = nlohmann::json::parse(http(port4, "/api/runs").body);
  CHECK(waiting["runs"].empty());
  CHECK(waiting["waiting"] == nlohmann::json::array({"later.db"}));
  CHECK_THAT(http(port4, "/").body, Contains("waiting for DB later.db to appear"));
  std::filesystem::copy_file(box.path("results.db"), box.path("later.db"));
  size_t appeared = 0;
  for (int i = 0; i < 100 && appeared == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    appeared = nlohmann::json::parse(http(port4, "/api/runs").body)["runs"].size();
  }
  CHECK(appeared == 1);
  CHECK_THAT(http(port4, "/").body, !Contains("waiting for DB later.db"));
  ::kill(later, SIGKILL);
  Sandbox::wait(later);
  CHECK(box.gpusweep("serve --help").code == 0);
}

// The ETA on a sweep of known length: 16 trials of about 0.5 s each, one
// at a time; at the halfway mark the ETA it gives is within 15% of the time
// the sweep then took to finish.
// [timing]: a prediction of wall time against the wall time that followed;
// a test starting beside it (ctest runs two at a time) slows the second half
// and not the first.
TEST_CASE("serve's ETA at the halfway mark of a steady sweep is within 15%",
          "[integration][serve][timing]") {
  Sandbox box;
  box.write("first.json", R"({"name": "first", "workload": "noop",
    "measure": {"warmup_steps": 0, "steps_per_block": 2, "blocks": 5, "repeats": 1,
                "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run first.json --db results.db").code == 0);
  box.write("s.json", R"({"name": "steady", "workload": "noop",
    "base": {"spin_us": 10000},
    "grid": {"batch_size": [1, 2]},
    "measure": {"warmup_steps": 0, "steps_per_block": 10, "blocks": 5, "repeats": 8,
                "interleave": 1}})");
  pid_t server = 0;
  const uint16_t port = start_server(box, "--db results.db", "serve.log", &server);
  const pid_t sweep = box.start("run s.json --db results.db", "sweep.log");
  using Clock = std::chrono::steady_clock;
  std::optional<double> eta;
  Clock::time_point at;
  std::string last;
  while (::waitpid(sweep, nullptr, WNOHANG) != sweep) {
    const Reply r = http(port, "/api/runs");
    if (r.status == 200) last = r.body;
    if (r.status == 200 && !eta) {
      const auto j = nlohmann::json::parse(r.body);
      for (const auto& run : j["runs"]) {
        if (run["name"] == "steady" && run["finished"].get<int64_t>() >= 8 &&
            run["eta_s"].is_number()) {
          eta = run["eta_s"].get<double>();
          at = Clock::now();
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(server, SIGKILL);
  Sandbox::wait(server);
  INFO("the last answer: " << last);
  REQUIRE(eta);
  const double actual = std::chrono::duration<double>(Clock::now() - at).count();
  INFO("ETA " << *eta << " s at the halfway mark, the rest took " << actual << " s");
  CHECK(std::abs(*eta - actual) <= 0.15 * actual);
}
