// A small HTTP/1.1 server (Boost.Beast over Asio) for `gpusweep serve`: GET
// and HEAD only, a handler that maps a request to a response, one thread a
// connection up to a cap, and an access token that every request must carry
// when one is set (a server bound beyond loopback). Nothing in a request
// reaches the file system: the handler sees a method, a path and a query.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace gpusweep::host {

struct HttpRequest {
  std::string method;
  std::string path;  // decoded, without the query
  std::map<std::string, std::string> query;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

struct HttpOptions {
  std::string bind = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (port() says which)
  // Non-empty: a request without it (?token=... or "Authorization: Bearer
  // ...") is answered 401.
  std::string token;
  int max_connections = 64;
};

// "%41" -> "A", "+" -> " "; nothing when the text is not valid
// percent-encoding.
std::optional<std::string> url_decode(const std::string& text);
// A query string's pairs, decoded; nothing when one does not decode.
std::optional<std::map<std::string, std::string>> parse_query(const std::string& query);

// Whether an address is loopback (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& address);

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
