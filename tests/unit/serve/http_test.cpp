// What `gpusweep serve` makes of a request's path and query before any route
// sees it, which Host headers name the server, and what a live server does
// with a handler's exception, a trickled request and many connections.
#include "serve/http.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

using namespace gpusweep::host;

TEST_CASE("percent-encoding decodes, and a broken escape is refused", "[serve]") {
  CHECK(url_decode("a%20b+c") == std::optional<std::string>("a b c"));
  CHECK(url_decode("%2e%2e/%2E%2E") == std::optional<std::string>("../.."));
  CHECK(url_decode("%00") == std::optional<std::string>(std::string(1, '\0')));
  CHECK_FALSE(url_decode("%"));
  CHECK_FALSE(url_decode("%4"));
  CHECK_FALSE(url_decode("%zz"));
  CHECK_FALSE(url_decode("abc%"));
}

TEST_CASE("a query's pairs decode, and one that does not refuses the whole query", "[serve]") {
  const auto q = parse_query("db=0&id=12&since=ab%3Dcd&empty=&flag&&x=%3Cscript%3E");
  REQUIRE(q);
  CHECK(q->at("db") == "0");
  CHECK(q->at("id") == "12");
  CHECK(q->at("since") == "ab=cd");
  CHECK(q->at("empty").empty());
  CHECK(q->at("flag").empty());
  CHECK(q->at("x") == "<script>");
  CHECK(q->size() == 6);
  CHECK_FALSE(parse_query("db=%G0"));
  CHECK(parse_query("")->empty());
}

TEST_CASE("a Host header must name this server: loopback, its address or an allowed name",
          "[serve]") {
  const std::vector<std::string> none;
  for (const char* ok :
       {"127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "localhost.:8080", "[::1]:8080"}) {
    CHECK(host_allowed(ok, "127.0.0.1", 8080, none));
  }
  // A page whose name rebinds to 127.0.0.1 names its own host; a wrong or
  // missing port, an empty or malformed value are refused too.
  for (const char* bad :
       {"attacker.example:8080", "attacker.example", "127.0.0.1:8081", "127.0.0.1", "localhost", "",
        ":8080", "[::1:8080", "127.0.0.1:x", "127.0.0.1:99999", "10.0.0.1:8080"}) {
    CHECK_FALSE(host_allowed(bad, "127.0.0.1", 8080, none));
  }
  // Port 80 may go unnamed, as browsers leave it out.
  CHECK(host_allowed("localhost", "127.0.0.1", 80, none));
  // The bound address, and names given with --allow-host (a bare name with
  // the server's port, a name:port as given: a tunnel's or proxy's).
  CHECK(host_allowed("10.0.0.1:8080", "10.0.0.1", 8080, none));
  CHECK(host_allowed("[fe80::1]:8080", "fe80::1", 8080, none));
  const std::vector<std::string> allowed = {"gpu-box.lan", "tunnel.example:443"};
  CHECK(host_allowed("gpu-box.lan:8080", "127.0.0.1", 8080, allowed));
  CHECK(host_allowed("GPU-box.lan:8080", "127.0.0.1", 8080, allowed));
  CHECK(host_allowed("tunnel.example:443", "127.0.0.1", 8080, allowed));
  CHECK_FALSE(host_allowed("tunnel.example:8080", "127.0.0.1", 8080, allowed));
  CHECK_FALSE(host_allowed("gpu-box.lan:9", "127.0.0.1", 8080, allowed));
  // Bound to every address: any IP address (it cannot be rebound), but a
  // name only when allowed.
  CHECK(host_allowed("192.168.1.7:8080", "0.0.0.0", 8080, none));
  CHECK(host_allowed("[2001:db8::7]:8080", "::", 8080, none));
  CHECK_FALSE(host_allowed("attacker.example:8080", "0.0.0.0", 8080, none));
}

namespace {

// A server on a free loopback port, run on a thread of its own until the
// end of the scope.
struct LiveServer {
  HttpServer server;
  std::thread thread;
  LiveServer(const HttpOptions& options, HttpServer::Handler handler)
      : server(options, std::move(handler)), thread([this] { server.run(); }) {}
  ~LiveServer() {
    server.stop();
    thread.join();
  }
};

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{20, 0};  // no test read waits longer
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void send_text(int fd, const std::string& text) {
  (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

// Everything the server sends until it closes the connection.
std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

HttpOptions loopback() {
  HttpOptions o;
  o.port = 0;
  return o;
}

}  // namespace

TEST_CASE("a handler's exception answers 500 without its text, which may name files", "[serve]") {
  LiveServer live(loopback(), [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("/home/someone/secret/results.db: disk I/O error");
  });
  const int fd = connect_to(live.server.port());
  send_text(fd, "GET /api/runs HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(live.server.port()) +
                    "\r\n\r\n");
  const std::string reply = read_all(fd);
  ::close(fd);
  CHECK(reply.rfind("HTTP/1.0 500", 0) == 0);
  CHECK(reply.find("/api/runs") != std::string::npos);
  CHECK(reply.find("secret") == std::string::npos);
  CHECK(reply.find("disk I/O") == std::string::npos);
}

TEST_CASE(
    "a client trickling a request loses the connection at the deadline, and one address "
    "holds at most its share of connections",
    "[serve]") {
  HttpOptions options = loopback();
  options.deadline_s = 1;
  options.max_per_client = 2;
  LiveServer live(options, [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "ok"};
  });
  const uint16_t port = live.server.port();
  // Slowloris: one header line every 0.2 s, 100 lines (20 s) if the server
  // waited for them all; it closes the connection at its 1 s deadline.
  const int slow = connect_to(port);
  const auto start = std::chrono::steady_clock::now();
  send_text(slow, "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n");
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    send_text(slow, "X-Slow: " + std::to_string(i) + "\r\n");
    char c = 0;
    closed = ::recv(slow, &c, 1, MSG_DONTWAIT) == 0;
  }
  const double held =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(slow);
  CHECK(closed);
  CHECK(held < 10.0);
  // Two idle connections from 127.0.0.1 are its share: a third is answered
  // 503 at once; when one closes, a new one is served.
  const int a = connect_to(port);
  const int b = connect_to(port);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int c = connect_to(port);
  const std::string refused = read_all(c);
  ::close(c);
  CHECK(refused.find("503") != std::string::npos);
  CHECK(refused.find("too many connections from 127.0.0.1") != std::string::npos);
  ::close(a);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int d = connect_to(port);
  send_text(d, "GET / HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n");
  CHECK(read_all(d).rfind("HTTP/1.0 200", 0) == 0);
  ::close(d);
  ::close(b);
}
