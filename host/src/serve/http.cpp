// The HTTP server of `gpusweep serve`; see http.hpp.
#include "serve/http.hpp"

#include "support/error.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <thread>

namespace gpusweep::host {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// An idle keep-alive connection is closed after this long.
constexpr int kIdleTimeoutS = 30;
// The largest request head accepted (GET: no body).
constexpr size_t kMaxHeader = 16 * 1024;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Equal without an early exit: a token's prefix cannot be timed.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ (i < b.size() ? b[i] : 0);
  return diff == 0;
}

// What the server shares with its connection threads: they may outlive a
// stopped server's run() by the time their last request takes.
struct Shared {
  HttpServer::Handler handler;
  std::string token;
  int max_connections = 64;
  std::atomic<int> active{0};
};

http::response<http::string_body> make_response(const HttpResponse& r, unsigned version,
                                                bool keep_alive, bool head) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "gpusweep");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  if (r.content_type.rfind("text/html", 0) == 0) {
    // The page is self-contained: its own inline script and style, requests
    // to this server only, no frames of other origins.
    res.set("Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:; frame-src 'self'; frame-ancestors 'self'");
  }
  res.keep_alive(keep_alive);
  res.body() = head ? std::string() : r.body;
  res.prepare_payload();
  if (head) res.content_length(r.body.size());
  return res;
}

HttpResponse answer(const Shared& shared, const http::request<http::string_body>& req) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    return {405, "text/plain", "only GET and HEAD: gpusweep serve is read-only\n"};
  }
  const std::string target(req.target());
  const auto q = target.find('?');
  HttpRequest r;
  r.method = std::string(req.method_string());
  const auto path = url_decode(target.substr(0, q));
  const auto query = parse_query(q == std::string::npos ? "" : target.substr(q + 1));
  if (!path || !query || path->empty() || (*path)[0] != '/' ||
      path->find("..") != std::string::npos || path->find('\0') != std::string::npos) {
    return {400, "text/plain", "bad request path\n"};
  }
  r.path = *path;
  r.query = *query;
  if (!shared.token.empty()) {
    std::string given;
    if (auto it = r.query.find("token"); it != r.query.end()) given = it->second;
    const auto auth = req.find(http::field::authorization);
    if (auth != req.end()) {
      const std::string value(auth->value());
      if (value.rfind("Bearer ", 0) == 0) given = value.substr(7);
    }
    if (!same_token(given, shared.token)) {
      return {401, "text/plain",
              "this server needs its access token: open the URL it printed (…?token=…)\n"};
    }
  }
  try {
    return shared.handler(r);
  } catch (const std::exception& e) {
    return {500, "text/plain", std::string("error: ") + e.what() + "\n"};
  }
}

void session(std::shared_ptr<Shared> shared, tcp::socket socket) {
  timeval tv{kIdleTimeoutS, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeader);
    parser.body_limit(1024);
    http::read(socket, buffer, parser, ec);
    if (ec) break;  // the end of the stream, a timeout, or a bad request
    const auto& req = parser.get();
    const HttpResponse r = answer(*shared, req);
    const bool keep = req.keep_alive() && r.status < 400;
    auto res = make_response(r, req.version(), keep, req.method() == http::verb::head);
    http::write(socket, res, ec);
    if (ec || !keep) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  --shared->active;
}

}  // namespace

std::optional<std::string> url_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> parse_query(const std::string& query) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    const std::string pair = query.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const auto key = url_decode(pair.substr(0, eq));
    const auto value = url_decode(eq == std::string::npos ? "" : pair.substr(eq + 1));
    if (!key || !value) return std::nullopt;
    out[*key] = *value;
  }
  return out;
}

bool is_loopback(const std::string& address) {
  if (address == "localhost") return true;
  beast::error_code ec;
  const auto a = boost::asio::ip::make_address(address, ec);
  return !ec && a.is_loopback();
}

struct HttpServer::Impl {
  boost::asio::io_context io;
  tcp::acceptor acceptor{io};
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  std::atomic<bool> stopping{false};
};

HttpServer::HttpServer(const HttpOptions& options, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->shared->handler = std::move(handler);
  impl_->shared->token = options.token;
  impl_->shared->max_connections = options.max_connections;
  beast::error_code ec;
  const std::string host = options.bind == "localhost" ? "127.0.0.1" : options.bind;
  const auto address = boost::asio::ip::make_address(host, ec);
  if (ec) {
    throw UsageError("--bind " + options.bind +
                     ": not an IP address (give one of this machine's, such as 127.0.0.1)");
  }
  const tcp::endpoint endpoint(address, options.port);
  auto& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw UsageError("cannot listen on " + options.bind + ":" + std::to_string(options.port) +
                     ": " + ec.message() + " (--port 0 takes any free port)");
  }
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() {
  for (;;) {
    tcp::socket socket(impl_->io);
    beast::error_code ec;
    impl_->acceptor.accept(socket, ec);
    if (impl_->stopping) return;
    if (ec) continue;
    auto shared = impl_->shared;
    if (shared->active >= shared->max_connections) {
      auto res = make_response({503, "text/plain", "too many connections\n"}, 11, false, false);
      http::write(socket, res, ec);
      continue;
    }
    ++shared->active;
    std::thread(session, shared, std::move(socket)).detach();
  }
}

void HttpServer::stop() {
  impl_->stopping = true;
  // Wakes the blocking accept (it returns with an error, then sees stopping).
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
}

}  // namespace gpusweep::host
