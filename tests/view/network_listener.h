// A stand-in HTTP proxy on 127.0.0.1 that records every connection made to it and answers none.
// Chromium pointed at it (--proxy-server, with loopback not bypassed) sends it every request a
// page makes, so "the page fetched nothing" becomes "the listener saw no page request".
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace capgraph::view_test {

class NetworkListener {
 public:
  NetworkListener();  // listens on an ephemeral port; throws std::runtime_error when it cannot
  ~NetworkListener();
  NetworkListener(const NetworkListener &) = delete;
  NetworkListener &operator=(const NetworkListener &) = delete;

  int port() const { return port_; }
  // The first line of each request made so far (after waiting for pending connections) ("GET
  // http://host/path HTTP/1.1", "CONNECT host:443 HTTP/1.1"), or "(no request line)" for a
  // connection that sent none in time.
  std::vector<std::string> requests();

 private:
  void serve();
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> idle_polls_{0};  // polls in a row that found no connection
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// The host a proxy request line names ("" when it names none).
std::string request_host(const std::string &request_line);

}  // namespace capgraph::view_test
