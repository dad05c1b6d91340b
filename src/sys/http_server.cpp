// sys/http_server.cpp: see http_server.hpp.
#include "sys/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/thread_name.hpp"

namespace gb::sys {

namespace {

constexpr std::size_t kMaxHeadBytes = 16 * 1024;
constexpr std::size_t kMaxConnections = 64;
constexpr int kPollTimeoutMs = 100;
constexpr auto kIdleTimeout = std::chrono::seconds(30);
// After stop() or Ctrl-C, what is left to write gets this long.
constexpr auto kFlushTimeout = std::chrono::milliseconds(500);
constexpr auto kDrainTimeout = std::chrono::seconds(1);

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::string sockaddr_text(const sockaddr_storage& sa, int& port) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (sa.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&sa);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&sa);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return std::string(host) + ":" + std::to_string(port);
}

struct Connection {
  int fd = -1;
  std::string in;
  std::string out;
  std::size_t out_sent = 0;
  bool close_after_write = false;
  // Answered and shut for writing: what the client still sends is read and dropped until it
  // closes, so its unread bytes do not make the kernel reset the connection (and drop the
  // answer) -- the "lingering close" of RFC 9112 9.6.
  bool draining = false;
  std::chrono::steady_clock::time_point last_activity;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ListenAddress parse_listen_address(std::string_view text) {
  const std::string shown(text);
  ListenAddress a;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw Error(ErrorKind::usage, "'" + shown + "' is not ADDRESS:PORT (IPv6: [::1]:9400)");
    a.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      throw Error(ErrorKind::usage,
                  "'" + shown + "' is not ADDRESS:PORT, e.g. 127.0.0.1:9400 or :9400");
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos)
      throw Error(ErrorKind::usage, "'" + shown + "': write an IPv6 address in brackets, [::1]:9400");
    port_text = text.substr(colon + 1);
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw Error(ErrorKind::usage, "'" + shown + "': the port must be a number 0..65535");
  a.port = std::stoi(std::string(port_text));
  if (a.port > 65535)
    throw Error(ErrorKind::usage, "'" + shown + "': the port must be a number 0..65535");
  return a;
}

std::string HttpRequest::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& [n, v] : headers)
    if (n == key) return v;
  return "";
}

HttpResponse not_found(const HttpRequest& request) {
  return {404, "text/plain; charset=utf-8", "not found: " + request.path + "\n"};
}

ParseResult parse_request(std::string_view buffer, HttpRequest& request, std::size_t& consumed) {
  // The head ends at the first empty line.
  std::size_t end = std::string_view::npos, head_len = 0;
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    if (buffer[i] != '\n') continue;
    const std::size_t next = i + 1;
    if (next < buffer.size() && buffer[next] == '\n') {
      end = i, head_len = next + 1;
      break;
    }
    if (next + 1 < buffer.size() && buffer[next] == '\r' && buffer[next + 1] == '\n') {
      end = i, head_len = next + 2;
      break;
    }
  }
  if (end == std::string_view::npos) return ParseResult::incomplete;
  // Leading empty lines before a request line are allowed (RFC 9112 2.2).
  std::string_view head = buffer.substr(0, end);
  while (head.starts_with("\r\n") || head.starts_with("\n"))
    head.remove_prefix(head.starts_with("\r\n") ? 2 : 1);
  HttpRequest r;
  const auto line_end = head.find('\n');
  const std::string_view line = trim(head.substr(0, line_end));
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos)
    return ParseResult::bad;
  r.method = std::string(line.substr(0, sp1));
  r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  r.version = std::string(line.substr(sp2 + 1));
  if (r.method.empty() || r.target.empty() || !r.version.starts_with("HTTP/"))
    return ParseResult::bad;
  std::string_view path = r.target;
  if (const auto scheme = path.find("://"); scheme != std::string_view::npos && !path.starts_with('/')) {
    const auto slash = path.find('/', scheme + 3);  // absolute form: http://host/metrics
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  if (!path.starts_with('/') && path != "*") return ParseResult::bad;
  r.path = std::string(path.substr(0, path.find_first_of("?#")));
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 1);
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view h = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const auto colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return ParseResult::bad;
    const std::string_view name = h.substr(0, colon);
    if (name.find_first_of(" \t") != std::string_view::npos) return ParseResult::bad;
    r.headers.emplace_back(lower(name), std::string(trim(h.substr(colon + 1))));
  }
  request = std::move(r);
  consumed = head_len;
  return ParseResult::ok;
}

std::string serialize_response(const HttpResponse& response, bool head_only, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    reason_phrase(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  if (response.status == 405) out += "Allow: GET, HEAD\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head_only) out += response.body;
  return out;
}

HttpServer::HttpServer(const ListenAddress& address, HttpHandler handler)
    : handler_(std::move(handler)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const std::string shown = (address.host.empty() ? "" : address.host) + ":" + port;
  if (const int rc = ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(),
                                   port.c_str(), &hints, &found);
      rc != 0)
    throw Error(ErrorKind::usage, "cannot listen on " + shown + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
  std::string why = "no address";
  for (const addrinfo* ai = found; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0 ||
        !set_nonblocking(fd)) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
    break;
  }
  if (listen_fd_ < 0) throw Error(ErrorKind::usage, "cannot listen on " + shown + ": " + why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  address_ = sockaddr_text(bound, port_);
  running_ = true;
  thread_ = std::thread([this] {
    name_this_thread("gb-http");
    serve();
  });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close_fd(listen_fd_);
}

void HttpServer::serve() {
  using Clock = std::chrono::steady_clock;
  std::vector<Connection> conns;
  std::optional<Clock::time_point> stopping_since;

  // Answers every complete request in c.in (pipelined ones in order).
  auto answer = [&](Connection& c) {
    while (!c.close_after_write) {
      HttpRequest req;
      std::size_t used = 0;
      const ParseResult p = parse_request(c.in, req, used);
      if (p == ParseResult::incomplete || (p == ParseResult::ok && used > kMaxHeadBytes)) {
        if (c.in.size() > kMaxHeadBytes) {
          c.out += serialize_response({431, "text/plain; charset=utf-8", "request head too large\n"},
                                      false, false);
          c.close_after_write = true;
        }
        return;
      }
      HttpResponse resp;
      bool keep = false;
      bool head_only = false;
      if (p == ParseResult::bad) {
        resp = {400, "text/plain; charset=utf-8", "bad request\n"};
      } else {
        c.in.erase(0, used);
        const std::string conn_hdr = lower(req.header("connection"));
        keep = req.version == "HTTP/1.1" ? conn_hdr.find("close") == std::string::npos
                                         : conn_hdr.find("keep-alive") != std::string::npos;
        const std::string length = req.header("content-length");
        const bool has_body = (!length.empty() && length != "0") ||
                              !req.header("transfer-encoding").empty();
        if (has_body) keep = false;  // the body is not read: the connection cannot go on
        if (req.version != "HTTP/1.1" && req.version != "HTTP/1.0") {
          resp = {505, "text/plain; charset=utf-8", "HTTP/1.1 only\n"};
          keep = false;
        } else if (req.method != "GET" && req.method != "HEAD") {
          resp = {405, "text/plain; charset=utf-8", "GET or HEAD only\n"};
        } else {
          head_only = req.method == "HEAD";
          try {
            resp = handler_(req);
          } catch (const std::exception& e) {
            resp = {500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
          }
        }
      }
      c.out += serialize_response(resp, head_only, keep);
      ++answered_;
      if (!keep) c.close_after_write = true;
    }
  };

  std::vector<pollfd> fds;
  while (true) {
    const auto now = Clock::now();
    if ((stop_ || cancel_requested()) && !stopping_since) {
      stopping_since = now;
      close_fd(listen_fd_);  // no new connections; what was asked is still answered
      for (Connection& c : conns) c.close_after_write = true;
    }
    if (stopping_since) {
      const bool pending = std::any_of(conns.begin(), conns.end(), [](const Connection& c) {
        return c.out_sent < c.out.size();
      });
      if (!pending || now - *stopping_since > kFlushTimeout) break;
    }
    fds.clear();
    if (listen_fd_ >= 0 && conns.size() < kMaxConnections) fds.push_back({listen_fd_, POLLIN, 0});
    const std::size_t first_conn = fds.size();
    for (const Connection& c : conns)
      fds.push_back({c.fd, static_cast<short>(c.out_sent < c.out.size() ? POLLOUT : POLLIN), 0});
    const int n = ::poll(fds.data(), fds.size(), kPollTimeoutMs);
    if (n < 0 && errno != EINTR) break;
    if (n > 0) {
      if (first_conn == 1 && (fds[0].revents & POLLIN)) {
        while (conns.size() < kMaxConnections) {
          const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;  // EAGAIN: no more waiting; other errors: the next poll tries again
          conns.push_back({fd, {}, {}, 0, false, false, Clock::now()});
        }
      }
      for (std::size_t i = first_conn; i < fds.size(); ++i) {
        Connection& c = conns[i - first_conn];
        const short ev = fds[i].revents;
        if (!ev) continue;
        c.last_activity = Clock::now();
        if (ev & POLLOUT) {
          const ssize_t w = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent,
                                   MSG_NOSIGNAL);
          if (w > 0) c.out_sent += static_cast<std::size_t>(w);
          else if (w < 0 && errno != EAGAIN && errno != EINTR) close_fd(c.fd);
          if (c.fd >= 0 && c.out_sent == c.out.size()) {
            c.out.clear();
            c.out_sent = 0;
            if (c.close_after_write) {
              ::shutdown(c.fd, SHUT_WR);
              c.draining = true;
            } else {
              answer(c);
            }  // pipelined requests waiting behind this response
          }
        } else if (ev & (POLLIN | POLLHUP | POLLERR)) {
          char buf[4096];
          const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
          if (r > 0) {
            if (!c.close_after_write && !c.draining) {
              c.in.append(buf, static_cast<std::size_t>(r));
              answer(c);
            }
          } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            close_fd(c.fd);  // the client is gone (a half-closed client gets nothing more)
          }
        }
      }
    }
    const auto t = Clock::now();
    for (Connection& c : conns)
      if (c.fd >= 0 && c.out.empty() &&
          t - c.last_activity > (c.draining ? std::chrono::duration_cast<Clock::duration>(kDrainTimeout)
                                            : std::chrono::duration_cast<Clock::duration>(kIdleTimeout)))
        close_fd(c.fd);
    std::erase_if(conns, [](const Connection& c) { return c.fd < 0; });
  }
  for (Connection& c : conns) close_fd(c.fd);
  close_fd(listen_fd_);
  running_ = false;
}

}  // namespace gb::sys
