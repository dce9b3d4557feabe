// A small HTTP/1.1 server (Boost.Beast over Asio) for `gpusweep serve`: GET
// and HEAD only, a handler that maps a request to a response, one thread a
// connection up to a cap (in all and per client address), a deadline for
// each whole request and response, and three guards against other pages and other
// users, checked before any handler runs:
//   - the Host header must name this server: the loopback address,
//     localhost, the bound address or a name allowed by the caller, with the
//     server's port (a DNS-rebinding page names its own host: 403);
//   - anything but a plain GET of the page "/" is refused when the browser
//     says it comes from another site (Sec-Fetch-Site) or another origin
//     (Origin);
//   - the access token, when one is set, must come with every request: in
//     the query (?token=), as "Authorization: Bearer", or in the cookie the
//     page's first load sets (HttpOnly, SameSite=Strict, named by the port).
// Nothing in a request reaches the file system: the handler sees a method, a
// path and a query.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

struct HttpRequest {
  std::string method;
  std::string path;  // decoded, without the query
  std::map<std::string, std::string> query;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(unsigned status_, std::string content_type_, std::string body_)
      : status(status_), content_type(std::move(content_type_)), body(std::move(body_)) {}
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra response headers (name, value).
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpOptions {
  std::string bind = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (port() says which)
  // Non-empty: a request without it (?token=... or "Authorization: Bearer
  // ...") is answered 401.
  std::string token;
  // Host names a request's Host header may name besides the loopback
  // address, localhost and the bound address (as `--allow-host` gives
  // them: a name, or a name with a port).
  std::vector<std::string> allowed_hosts;
  int max_connections = 64;
  // Connections open at once from one client address (a 503 beyond).
  int max_per_client = 16;
  // A request must arrive whole within this many seconds of the connection's
  // opening or the previous response (idle keep-alive time included), and a
  // response must be taken whole within as long: a client that trickles
  // bytes cannot hold a connection for longer.
  int deadline_s = 30;
};

// "%41" -> "A", "+" -> " "; nothing when the text is not valid
// percent-encoding.
std::optional<std::string> url_decode(const std::string& text);
// A query string's pairs, decoded; nothing when one does not decode.
std::optional<std::map<std::string, std::string>> parse_query(const std::string& query);

// Whether a Host header's value (or an Origin's authority) names a server
// bound to `bind` on `port`: the loopback address, localhost, [::1], the
// bound address, or one of `allowed` (a name, or name:port), each with the
// port (a value without one only for port 80). A server bound to every
// address (0.0.0.0, ::) also answers to any IP address and this machine's
// host name: an address cannot be rebound, a name can.
bool host_allowed(const std::string& host, const std::string& bind, uint16_t port,
                  const std::vector<std::string>& allowed);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Binds and listens (UsageError when the address cannot be bound).
  HttpServer(const HttpOptions& options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpusweep::host
