// tests/unit/test_sys_http_server.cpp: the small HTTP/1.1 server behind `--prometheus`
// (sys/http_server): address parsing, request parsing, 404 and 405, keep-alive and pipelining,
// several clients at once, and a clean stop (also on Ctrl-C's flag) with clients connected.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "sys/http_server.hpp"

using gb::sys::HttpRequest;
using gb::sys::HttpResponse;
using gb::sys::HttpServer;
using gb::sys::ParseResult;

namespace {

HttpResponse metrics_handler(const HttpRequest& r) {
  if (r.path != "/metrics") return gb::sys::not_found(r);
  return {200, "text/plain; version=0.0.4", "up 1\n"};
}

// A blocking client socket on 127.0.0.1:port.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

// Reads until the peer closes or `timeout` passes.
std::string read_until_close(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

// One request with Connection: close; the whole response.
std::string fetch(int port, const std::string& request) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  send_all(fd, request);
  std::string out = read_until_close(fd);
  ::close(fd);
  return out;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HttpListenAddress, ParsesHostAndPort) {
  auto a = gb::sys::parse_listen_address("127.0.0.1:9400");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9400);
  a = gb::sys::parse_listen_address(":0");
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.port, 0);
  a = gb::sys::parse_listen_address("[::1]:80");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 80);
}

TEST(HttpListenAddress, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"9400", "127.0.0.1:", "127.0.0.1:http", "host:70000", "::1:80", "[::1]80"})
    EXPECT_THROW(gb::sys::parse_listen_address(bad), gb::Error) << bad;
}

TEST(HttpRequestParse, ReadsRequestLineAndHeaders) {
  HttpRequest r;
  std::size_t used = 0;
  const std::string text =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding:  gzip \r\n\r\nGET / HTTP/1.1";
  ASSERT_EQ(gb::sys::parse_request(text, r, used), ParseResult::ok);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(r.target, "/metrics?x=1");
  EXPECT_EQ(r.version, "HTTP/1.1");
  EXPECT_EQ(r.header("accept-encoding"), "gzip");
  EXPECT_EQ(r.header("HOST"), "a");
  EXPECT_EQ(text.substr(used), "GET / HTTP/1.1") << "the next pipelined request stays";
}

TEST(HttpRequestParse, WaitsForTheBlankLineAndAcceptsBareLf) {
  HttpRequest r;
  std::size_t used = 0;
  EXPECT_EQ(gb::sys::parse_request("GET /metrics HTTP/1.1\r\nHost: a\r\n", r, used),
            ParseResult::incomplete);
  EXPECT_EQ(gb::sys::parse_request("GET /metrics HTTP/1.0\n\n", r, used), ParseResult::ok);
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(gb::sys::parse_request("GET http://h:1/metrics HTTP/1.1\r\n\r\n", r, used),
            ParseResult::ok);
  EXPECT_EQ(r.path, "/metrics") << "absolute form";
}

TEST(HttpRequestParse, RefusesMalformedHeads) {
  HttpRequest r;
  std::size_t used = 0;
  for (const char* bad : {"GET\r\n\r\n", "GET /metrics\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
                          "GET metrics HTTP/1.1\r\n\r\n", "GET / FTP/1\r\n\r\n",
                          "GET / HTTP/1.1\r\nno colon\r\n\r\n", "GET / HTTP/1.1\r\nA B: c\r\n\r\n"})
    EXPECT_EQ(gb::sys::parse_request(bad, r, used), ParseResult::bad) << bad;
}

TEST(HttpServerTest, PortZeroPicksAFreePortAndServesMetrics) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  const std::string r = fetch(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\n")) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos);
  EXPECT_NE(r.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_TRUE(r.ends_with("\r\n\r\nup 1\n")) << r;
}

TEST(HttpServerTest, AnswersOtherPaths404AndOtherMethods405) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  EXPECT_TRUE(fetch(server.port(), "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
                  .starts_with("HTTP/1.1 404 Not Found\r\n"));
  const std::string post =
      fetch(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_TRUE(fetch(server.port(), "garbage\r\n\r\n").starts_with("HTTP/1.1 400 Bad Request\r\n"));
  const std::string head = fetch(server.port(), "HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << "HEAD: no body";
}

TEST(HttpServerTest, RefusesAnEndlessHead) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  const std::string r = fetch(server.port(), "GET /metrics HTTP/1.1\r\nX: " +
                                                 std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 431 ")) << r.substr(0, 100);
}

TEST(HttpServerTest, KeepsTheConnectionForPipelinedRequests) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  const int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /metrics HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n"
               "Connection: close\r\n\r\n");
  const std::string r = read_until_close(fd);
  ::close(fd);
  EXPECT_EQ(count(r, "HTTP/1.1 200 OK"), 2u) << r;
  EXPECT_EQ(count(r, "HTTP/1.1 404 "), 1u);
  EXPECT_LT(r.find("200 OK"), r.find("404 ")) << "answers in order";
  EXPECT_EQ(server.requests_answered(), 3u);
}

TEST(HttpServerTest, AnswersSeveralClientsAtOnce) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  // A client that connects and says nothing must not hold up the others.
  const int silent = connect_to(server.port());
  ASSERT_GE(silent, 0);
  constexpr int kClients = 8, kScrapes = 10;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&] {
      for (int i = 0; i < kScrapes; ++i)
        if (fetch(server.port(), "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
                .ends_with("up 1\n"))
          ++ok;
    });
  for (std::thread& t : clients) t.join();
  ::close(silent);
  EXPECT_EQ(ok.load(), kClients * kScrapes);
}

TEST(HttpServerTest, StopsPromptlyWithClientsConnected) {
  auto server = std::make_unique<HttpServer>(gb::sys::parse_listen_address("127.0.0.1:0"),
                                             metrics_handler);
  const int port = server->port();
  const int idle = connect_to(port);
  ASSERT_GE(idle, 0);
  // Keep-alive: after its answer the server holds the connection open for the next request.
  send_all(idle, "GET /metrics HTTP/1.1\r\n\r\n");
  std::string first;
  char buf[4096];
  while (!first.ends_with("up 1\n")) {
    const ssize_t r = ::recv(idle, buf, sizeof buf, 0);
    ASSERT_GT(r, 0);
    first.append(buf, static_cast<std::size_t>(r));
  }
  EXPECT_NE(first.find("Connection: keep-alive"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  server->stop();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);
  EXPECT_FALSE(server->running());
  EXPECT_EQ(read_until_close(idle, std::chrono::seconds(2)), "") << "closed, nothing more sent";
  ::close(idle);
  EXPECT_EQ(connect_to(port), -1) << "the port is closed";
}

TEST(HttpServerTest, StopsOnCtrlC) {
  HttpServer server(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  gb::request_cancel();
  const auto t0 = std::chrono::steady_clock::now();
  while (server.running() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  gb::reset_cancel();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(connect_to(server.port()), -1);
}

TEST(HttpServerTest, AnAddressInUseIsAUsageError) {
  HttpServer first(gb::sys::parse_listen_address("127.0.0.1:0"), metrics_handler);
  try {
    HttpServer second(gb::sys::parse_listen_address(first.address()), metrics_handler);
    FAIL() << "bound twice";
  } catch (const gb::Error& e) {
    EXPECT_EQ(e.kind(), gb::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
}
