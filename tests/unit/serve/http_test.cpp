// What `gpusweep serve` makes of a request's path and query before any route
// sees it, and which addresses count as loopback (no token needed).
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

TEST_CASE("loopback addresses need no token, and any other does", "[serve]") {
  CHECK(is_loopback("127.0.0.1"));
  CHECK(is_loopback("127.1.2.3"));
  CHECK(is_loopback("::1"));
  CHECK(is_loopback("localhost"));
  CHECK_FALSE(is_loopback("0.0.0.0"));
  CHECK_FALSE(is_loopback("::"));
  CHECK_FALSE(is_loopback("10.0.0.1"));
  CHECK_FALSE(is_loopback("not an address"));
}
