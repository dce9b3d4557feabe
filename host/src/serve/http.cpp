// The HTTP server of `gpusweep serve`; see http.hpp.
#include "serve/http.hpp"

#include "support/error.hpp"
#include "support/procfs.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

namespace gpusweep::host {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

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
  // The sockets' context: a connection thread holds it (through Shared)
  // until its socket is gone, even past the server's end.
  boost::asio::io_context io;
  HttpServer::Handler handler;
  std::string token;
  std::string bind;
  uint16_t port = 0;  // the port bound (set before the first request)
  std::vector<std::string> allowed_hosts;
  int max_connections = 64;
  int max_per_client = 16;
  int deadline_s = 30;
  std::atomic<int> active{0};
  std::mutex clients_mutex;
  std::map<std::string, int> clients;  // open connections by client address
};

using Clock = std::chrono::steady_clock;

// Waits until a socket can be read (POLLIN) or written (POLLOUT), at most
// until the deadline; false when the deadline came first. The sockets are
// non-blocking: Asio's blocking calls would wait in poll() without a limit,
// whatever SO_RCVTIMEO says.
bool ready(tcp::socket& socket, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{socket.native_handle(), events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "name:port", "[v6]:port" or a bare name: the name in lower case (an IPv6
// address keeps its brackets; a final dot goes) and the port if given;
// nothing when malformed.
struct HostPort {
  std::string name;
  std::optional<uint16_t> port;
};
std::optional<HostPort> split_host(const std::string& text) {
  HostPort out;
  std::string rest;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) return std::nullopt;
    out.name = lower(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    const auto colon = text.find(':');
    out.name = lower(text.substr(0, colon));
    rest = colon == std::string::npos ? "" : text.substr(colon);
  }
  if (!out.name.empty() && out.name.back() == '.') out.name.pop_back();
  if (out.name.empty()) return std::nullopt;
  if (!rest.empty()) {
    if (rest[0] != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
    unsigned value = 0;
    for (size_t i = 1; i < rest.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return std::nullopt;
      value = value * 10 + static_cast<unsigned>(rest[i] - '0');
    }
    if (value == 0 || value > 65535) return std::nullopt;
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

// An address as a Host header names it: IPv6 in brackets, lower case.
std::string bracketed(const std::string& address) {
  return address.find(':') != std::string::npos && address[0] != '[' ? "[" + lower(address) + "]"
                                                                     : lower(address);
}

// This machine's host name ("" when it has none).
std::string machine_name() { return lower(host_name()); }

// A header's value ("" when absent).
std::string header(const http::request<http::string_body>& req, beast::string_view name) {
  const auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

// The token the request carries, from the query, an Authorization header or
// the page's cookie ("" when none).
std::string given_token(const Shared& shared, const HttpRequest& r,
                        const http::request<http::string_body>& req) {
  if (auto it = r.query.find("token"); it != r.query.end()) return it->second;
  const std::string auth = header(req, "Authorization");
  if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
  const std::string name = "gpusweep_token_" + std::to_string(shared.port) + "=";
  const std::string cookies = "; " + header(req, "Cookie");
  const auto at = cookies.find("; " + name);
  if (at == std::string::npos) return "";
  const auto start = at + 2 + name.size();
  return cookies.substr(start, cookies.find(';', start) - start);
}

// Why a request is refused before any route sees it ("" when it is not):
// a Host that does not name this server, or a request of another site or
// origin (except a plain GET of the page, which a link may open).
std::string refusal(const Shared& shared, const std::string& path,
                    const http::request<http::string_body>& req) {
  const std::string host = header(req, "Host");
  if (!host_allowed(host, shared.bind, shared.port, shared.allowed_hosts)) {
    return "Host \"" + host + "\" does not name this server (open the URL it printed; " +
           "a name of your own: serve --allow-host NAME)\n";
  }
  if (path == "/") return "";
  const std::string site = lower(header(req, "Sec-Fetch-Site"));
  if (!site.empty() && site != "same-origin" && site != "none") {
    return "a request from another site (Sec-Fetch-Site: " + site + ")\n";
  }
  const std::string origin = header(req, "Origin");
  const std::string scheme = "http://";
  if (!origin.empty() &&
      (origin.rfind(scheme, 0) != 0 || !host_allowed(origin.substr(scheme.size()), shared.bind,
                                                     shared.port, shared.allowed_hosts))) {
    return "a request from another origin (" + origin + ")\n";
  }
  return "";
}

http::response<http::string_body> make_response(const HttpResponse& r, unsigned version,
                                                bool keep_alive, bool head) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "gpusweep");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  if (r.content_type.rfind("text/html", 0) == 0) {
    // No script runs and nothing loads unless the handler's own policy
    // (its headers, set below) allows it; the page allows its one script by
    // hash.
    res.set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'");
  }
  for (const auto& [name, value] : r.headers) res.set(name, value);
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
  if (const std::string why = refusal(shared, r.path, req); !why.empty()) {
    return {403, "text/plain", why};
  }
  const std::string given = given_token(shared, r, req);
  if (!shared.token.empty() && !same_token(given, shared.token)) {
    return {401, "text/plain",
            "this server needs its access token: open the URL it printed (…?token=…)\n"};
  }
  try {
    HttpResponse out = shared.handler(r);
    // The page's first load, with the token in its URL, leaves it in a
    // cookie that only this server's pages send (an HttpOnly one: no
    // script reads it).
    if (!shared.token.empty() && r.path == "/" && r.query.count("token") != 0U) {
      out.headers.emplace_back("Set-Cookie", "gpusweep_token_" + std::to_string(shared.port) + "=" +
                                                 shared.token +
                                                 "; Path=/; HttpOnly; SameSite=Strict");
    }
    return out;
  } catch (const std::exception& e) {
    // The reason (which may name files and folders) goes to the server's
    // log, not to the client.
    std::fprintf(stderr, "serve: %s: %s\n", r.path.c_str(), e.what());
    return {500, "text/plain",
            "error: the server could not answer " + r.path + " (its log says why)\n"};
  }
}

// Reads one whole request before the deadline (bytes trickled in do not
// extend it); false at the end of the stream, the deadline, or a bad
// request.
bool read_request(tcp::socket& socket, beast::flat_buffer& buffer,
                  http::request_parser<http::string_body>& parser, Clock::time_point deadline) {
  beast::error_code ec;
  for (;;) {
    if (buffer.size() > 0) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (parser.is_done()) return true;
      if (ec && ec != http::error::need_more) return false;
      ec = {};
      if (used > 0) continue;
    }
    if (!ready(socket, POLLIN, deadline)) return false;
    const size_t n = socket.read_some(buffer.prepare(4096), ec);
    if (ec == boost::asio::error::would_block) continue;
    if (ec) return false;
    buffer.commit(n);
  }
}

// Writes a whole response before the deadline; false when it could not.
bool write_response(tcp::socket& socket, http::response<http::string_body>& res,
                    Clock::time_point deadline) {
  http::response_serializer<http::string_body> out{res};
  beast::error_code ec;
  while (!out.is_done()) {
    if (!ready(socket, POLLOUT, deadline)) return false;
    http::write_some(socket, out, ec);
    if (ec == boost::asio::error::would_block) ec = {};
    if (ec) return false;
  }
  return true;
}

void session(std::shared_ptr<Shared> shared, tcp::socket socket, std::string client) {
  beast::error_code ec;
  socket.non_blocking(true, ec);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeader);
    parser.body_limit(1024);
    const auto limit = std::chrono::seconds(shared->deadline_s);
    if (!read_request(socket, buffer, parser, Clock::now() + limit)) break;
    const auto& req = parser.get();
    const HttpResponse r = answer(*shared, req);
    const bool keep = req.keep_alive() && r.status < 400;
    auto res = make_response(r, req.version(), keep, req.method() == http::verb::head);
    if (!write_response(socket, res, Clock::now() + limit) || !keep) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  {
    std::lock_guard<std::mutex> lock(shared->clients_mutex);
    if (--shared->clients[client] == 0) shared->clients.erase(client);
  }
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

bool host_allowed(const std::string& host, const std::string& bind, uint16_t port,
                  const std::vector<std::string>& allowed) {
  const auto h = split_host(host);
  if (!h) return false;
  for (const auto& a : allowed) {
    const auto e = split_host(a);
    const bool port_fits =
        e && (e->port ? e->port == h->port : h->port == port || (!h->port && port == 80));
    if (e && e->name == h->name && port_fits) return true;
  }
  if (h->port != port && !(!h->port && port == 80)) return false;
  if (h->name == "127.0.0.1" || h->name == "localhost" || h->name == "[::1]" ||
      h->name == bracketed(bind)) {
    return true;
  }
  beast::error_code ec;
  const auto bound = boost::asio::ip::make_address(bind, ec);
  if (ec || !bound.is_unspecified()) return false;
  std::string literal = h->name;
  if (literal.size() > 2 && literal[0] == '[') literal = literal.substr(1, literal.size() - 2);
  boost::asio::ip::make_address(literal, ec);
  if (!ec) return true;
  const std::string me = machine_name();
  return !me.empty() && (h->name == me || h->name == me.substr(0, me.find('.')));
}

struct HttpServer::Impl {
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();  // before the acceptor: it
  tcp::acceptor acceptor{shared->io};                           // must go first
  std::atomic<bool> stopping{false};
};

HttpServer::HttpServer(const HttpOptions& options, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->shared->handler = std::move(handler);
  impl_->shared->token = options.token;
  impl_->shared->max_connections = options.max_connections;
  impl_->shared->max_per_client = options.max_per_client;
  impl_->shared->deadline_s = options.deadline_s;
  impl_->shared->bind = options.bind;
  impl_->shared->allowed_hosts = options.allowed_hosts;
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
  impl_->shared->port = a.local_endpoint().port();
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() {
  for (;;) {
    tcp::socket socket(impl_->shared->io);
    beast::error_code ec;
    impl_->acceptor.accept(socket, ec);
    if (impl_->stopping) return;
    if (ec) continue;
    auto shared = impl_->shared;
    const std::string client = socket.remote_endpoint(ec).address().to_string();
    if (ec) continue;
    std::string busy;
    if (shared->active >= shared->max_connections) busy = "too many connections\n";
    {
      std::lock_guard<std::mutex> lock(shared->clients_mutex);
      if (busy.empty() && shared->clients[client] >= shared->max_per_client) {
        busy = "too many connections from " + client + "\n";
      }
      if (busy.empty()) ++shared->clients[client];
      if (shared->clients[client] == 0) shared->clients.erase(client);
    }
    if (!busy.empty()) {
      // Answered without waiting for the request, and within a second.
      socket.non_blocking(true, ec);
      auto res = make_response({503, "text/plain", busy}, 11, false, false);
      write_response(socket, res, Clock::now() + std::chrono::seconds(1));
      continue;
    }
    ++shared->active;
    // The socket goes before the thread's hold on Shared (and with it on
    // the io_context the socket belongs to): a server destroyed while a
    // connection is still open leaves that connection a context to close in.
    std::thread([shared, client,
                 owned = std::make_unique<tcp::socket>(std::move(socket))]() mutable {
      session(shared, std::move(*owned), client);
      owned.reset();
    }).detach();
  }
}

void HttpServer::stop() {
  impl_->stopping = true;
  // Wakes the blocking accept (it returns with an error, then sees stopping).
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
}

}  // namespace gpusweep::host
