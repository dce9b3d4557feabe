// What `gpusweep serve` makes of a request's path and query before any route
// sees it, and which Host headers name the server.
#include "serve/http.hpp"

#include <catch2/catch.hpp>

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
