// sys/http_server.hpp: a small HTTP/1.1 server on POSIX sockets, enough for a monitoring system
// to scrape a few paths (`gpubase watch --prometheus ADDR:PORT` serves /metrics with it). One
// thread polls the listening socket and every open connection (non-blocking, poll with a 100 ms
// timeout), so several scrapers are answered at once and stop() or Ctrl-C (core/cancel's flag)
// ends it within a tenth of a second. Keep-alive as HTTP/1.1 has it; GET and HEAD only (405
// for others), a request head over 16 KiB is refused (431), an idle connection is closed after
// 30 s. What a path answers is the handler's business (a 404 for paths it does not know).
//
//   HttpServer server(parse_listen_address("127.0.0.1:0"), [](const HttpRequest& r) {
//     return r.path == "/metrics" ? HttpResponse{200, "text/plain", text} : not_found(r);
//   });
//   server.address();   // "127.0.0.1:41234": port 0 picked a free port
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace gb::sys {

struct ListenAddress {
  std::string host;  // "" = every interface; "127.0.0.1", "::1", "localhost"
  int port = 0;      // 0: the system picks a free one
};

// "127.0.0.1:9400", "localhost:9400", "[::1]:0", ":9400" (every interface). Throws gb::Error
// (usage) naming what is wrong.
ListenAddress parse_listen_address(std::string_view text);

struct HttpRequest {
  std::string method;   // "GET"
  std::string target;   // "/metrics?x=1" as sent
  std::string path;     // "/metrics"
  std::string version;  // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  // The value of a header (names compared without case), or "".
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// 404 with a short text naming the path.
HttpResponse not_found(const HttpRequest& request);

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

enum class ParseResult { incomplete, ok, bad };
// Parses one request head at the start of `buffer` (up to and with the blank line; CRLF or LF
// line ends). ok: `request` filled, `consumed` = the head's length. A request with a body
// (Content-Length > 0, Transfer-Encoding) is parsed; the server answers it and closes.
ParseResult parse_request(std::string_view buffer, HttpRequest& request, std::size_t& consumed);

// A whole response, status line to body; HEAD: the same head, no body.
std::string serialize_response(const HttpResponse& response, bool head_only, bool keep_alive);

class HttpServer {
 public:
  // Binds, listens and starts serving. Throws gb::Error (usage) when the address cannot be
  // resolved or bound (in use, not an address of this host, a port needing privileges).
  HttpServer(const ListenAddress& address, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "127.0.0.1:41234", "[::1]:9400", "0.0.0.0:9400": what was bound, port 0 resolved.
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // Answers what was asked already, closes the listening socket and every connection, joins.
  void stop();
  bool running() const { return running_; }
  std::size_t requests_answered() const { return answered_; }

 private:
  void serve();

  HttpHandler handler_;
  int listen_fd_ = -1;
  std::string address_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::size_t> answered_{0};
  std::thread thread_;
};

}  // namespace gb::sys
