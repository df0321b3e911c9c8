// `capgraph view` pages opened in headless Chromium: the timeline and the memory chart drew (pixels
// in the screenshot, not a blank page), the page made no network request (a recording proxy),
// hostile ONNX names stay text, clicking a kernel outlines its buffers, and bad input fails
// cleanly.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "capgraph/capture_generated.h"
#include "cli_harness.h"
#include "json_value.h"
#include "network_listener.h"
#include "png_read.h"
#include "view_models.h"

using namespace capgraph;
using namespace capgraph::cli_test;
using namespace capgraph::view_test;

namespace {

constexpr int kWidth = 1400, kHeight = 1000;

// Chromium's own services, which it contacts at start-up even with background networking, sync,
// extensions and component updates switched off (seen with Debian's chromium 156: an on-demand
// component check, account and network-time requests). They are the browser's requests, not the
// page's; any other host counts as the page fetching something.
const std::set<std::string> kBrowserHosts = {"update.googleapis.com", "accounts.google.com",
                                             "clients2.google.com", "redirector.gvt1.com"};

std::string chromium_path() {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/chromium").c_str(), X_OK) == 0) return dir + "/chromium";
  FAIL(
      "chromium is not installed: this test opens the view in Debian's headless chromium "
      "(scripts/setup.sh installs it; "
      "or apt-get install --no-install-recommends chromium)");
  return "";
}

// Opens `url` in a fresh headless Chromium whose every request goes to `net`; `action` is
// --dump-dom (the DOM after the scripts ran, on stdout) or --screenshot=FILE.
cli_result chromium_run(NetworkListener &net, const std::string &url, const std::string &action) {
  static int profile = 0;
  const std::string port = std::to_string(net.port());
  cli_result r = process_run(
      {chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       "--no-default-browser-check",
       "--user-data-dir=" + scratch_path("chromium_profile_" + std::to_string(profile++)),
       "--disable-background-networking", "--disable-component-update", "--disable-extensions",
       "--disable-sync", "--disable-default-apps", "--disable-features=NetworkTimeServiceQuerying",
       "--force-device-scale-factor=1",
       "--window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight),
       "--proxy-server=127.0.0.1:" + port, "--proxy-bypass-list=<-loopback>", action, url},
      60000);
  INFO("chromium output: ", r.output);
  REQUIRE_MESSAGE(!r.timed_out, "chromium did not finish in 60 s");
  REQUIRE(r.exit_code == 0);
  return r;
}

std::string file_url(const std::string &path) {
  for (char c : path)
    REQUIRE_MESSAGE((isalnum((unsigned char)c) || std::string("/._-").find(c) != std::string::npos),
                    "unusual path " << path);
  return "file://" + path;
}

// The page's requests among those the listener saw.
std::vector<std::string> page_requests(NetworkListener &net) {
  std::vector<std::string> page;
  for (const std::string &r : net.requests())
    if (!kBrowserHosts.count(request_host(r))) page.push_back(r);
  return page;
}

// data-NAME="..." of the <body> element in a --dump-dom output ("" when absent).
std::string body_attr(const std::string &dom, const std::string &name) {
  const size_t body = dom.find("<body");
  if (body == std::string::npos) return "";
  const size_t end = dom.find('>', body);
  const std::string tag = dom.substr(body, end - body);
  const std::string key = " data-" + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return tag.substr(from, tag.find('"', from) - from);
}

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
};

Rect rect_parse(const std::string &s) {
  Rect r;
  REQUIRE_MESSAGE(std::sscanf(s.c_str(), "%d,%d,%d,%d", &r.x, &r.y, &r.w, &r.h) == 4,
                  "not a rectangle: '" << s << "'");
  return r;
}

// How much of a rectangle is drawn: the share of pixels that differ from the canvas background
// (#fbfbfd) by more than a faint line would, and how many distinct colours (4 bits a channel) they
// have.
struct Ink {
  double share = 0;
  size_t colours = 0;
};

Ink ink_measure(const Image &img, Rect r) {
  // Two pixels in from each side: the canvas border is not drawing.
  const int x0 = r.x + 2, y0 = r.y + 2, x1 = r.x + r.w - 2, y1 = r.y + r.h - 2;
  REQUIRE_MESSAGE((x0 >= 0 && y0 >= 0 && x1 <= img.width && y1 <= img.height && x1 > x0 && y1 > y0),
                  "rectangle " << r.x << "," << r.y << "," << r.w << "," << r.h
                               << " is not inside the " << img.width << "x" << img.height
                               << " screenshot");
  size_t inked = 0;
  std::set<int> colours;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      const uint8_t *p = img.at(x, y);
      if (std::abs(p[0] - 251) + std::abs(p[1] - 251) + std::abs(p[2] - 253) <= 24) continue;
      inked++;
      colours.insert((p[0] >> 4) << 8 | (p[1] >> 4) << 4 | (p[2] >> 4));
    }
  return {double(inked) / double((x1 - x0) * (y1 - y0)), colours.size()};
}

const fb::Capture *capture_of(const std::vector<uint8_t> &bytes) {
  return fb::GetCapture(bytes.data());
}

// The page of `cap`, opened twice (DOM, then screenshot): it drew every step and planned buffer,
// the timeline and memory chart hold a drawing, and the page fetched nothing.
std::string page_check(const std::string &cap, const std::string &html, const std::string &times) {
  const std::vector<uint8_t> bytes = file_read(cap);
  const fb::Capture *c = capture_of(bytes);
  NetworkListener net;
  const cli_result dom = chromium_run(net, file_url(html), "--dump-dom");
  INFO("body: ", dom.output.substr(dom.output.find("<body"), 400));
  CHECK(body_attr(dom.output, "status") == "drawn");
  CHECK(body_attr(dom.output, "steps") == std::to_string(c->steps()->size()));
  CHECK(body_attr(dom.output, "buffers") == std::to_string(c->buffers()->size()));
  CHECK(body_attr(dom.output, "times") == times);

  const std::string png = html + ".png";
  chromium_run(net, file_url(html), "--screenshot=" + png);
  const Image img = png_decode(file_read(png));
  CHECK(img.width == kWidth);
  CHECK(img.height == kHeight);
  const Ink timeline = ink_measure(img, rect_parse(body_attr(dom.output, "timeline")));
  const Ink memory = ink_measure(img, rect_parse(body_attr(dom.output, "memory")));
  MESSAGE(html << ": timeline " << int(timeline.share * 100) << "% inked in " << timeline.colours
               << " colours, memory chart " << int(memory.share * 100) << "% in " << memory.colours
               << " colours");
  // The timeline's boxes fill most of its strip; the memory chart at least holds the model's input
  // and output, drawn across the whole width, and intermediates in more colours.
  CHECK(timeline.share > 0.4);
  CHECK(timeline.colours >= 2);
  CHECK(memory.share > 0.05);
  CHECK(memory.colours >= 2);

  const std::vector<std::string> fetched = page_requests(net);
  std::string list;
  for (const std::string &f : fetched) list += "\n  " + f;
  CHECK_MESSAGE(fetched.empty(), "the page made network requests:" << list);
  return dom.output;
}

}  // namespace

TEST_CASE(
    "view: a generated CNN's page draws its timeline and memory plan, keeps hostile names as text, "
    "fetches nothing") {
  const std::string cap = capture_small_cnn(), html = scratch_path("small_cnn.html");
  check_success(cli_run({"view", cap, "-o", html}));
  const std::string dom = page_check(cap, html, "estimated");
  // A name that ends a <script> element or opens a tag is text in the kernel table, not markup.
  CHECK(dom.find("&lt;/script&gt;&lt;img src=http://example.invalid/node.png&gt;&lt;!--") !=
        std::string::npos);
  CHECK(dom.find("value\"&lt;/SCRIPT "
                 "&gt;&lt;script&gt;document.body.dataset.status='hacked'&lt;/script&gt;") !=
        std::string::npos);
  // No element came from a name: no image, and only the page's own two <script> elements (the
  // hostile one would also have set data-status, which page_check found "drawn").
  CHECK(dom.find("<img") == std::string::npos);
  size_t scripts = 0;
  for (size_t at = dom.find("<script"); at != std::string::npos; at = dom.find("<script", at + 1))
    scripts++;
  CHECK(scripts == 2);
}

// Issue 26: with --device, a fake that emulates the machine code replays the capture once and the
// page draws that device's ESTIMATED time per step (labelled so) and a table of what its emulator
// counted per kernel. fake-adreno: the a630 cost model (targets/adreno/fake/a630_estimate.h).
TEST_CASE("view --device fake-adreno: the estimated a630 timeline with the counts per kernel") {
  const std::string cap = scratch_path("small_cnn_adreno.cap"),
                    html = scratch_path("small_cnn_adreno.html");
  const cli_result compiled =
      cli_run({"compile", model_small_cnn(), "-o", cap, "--target", "adreno-a630"}, 120000);
  if (compiled.exit_code != 0 && compiled.output.find("without Mesa's ir3") != std::string::npos) {
    MESSAGE("SKIPPED: capgraph was built without Mesa's ir3");
    return;
  }
  check_success(compiled);
  check_success(cli_run({"view", cap, "--device", "fake-adreno", "-o", html}, 120000));
  const std::string dom = page_check(cap, html, "estimated");
  CHECK(body_attr(dom, "device") == "fake-adreno");
  const std::vector<uint8_t> bytes = file_read(cap);
  std::set<uint32_t> launched;
  for (const fb::Step *s : *capture_of(bytes)->steps())
    if (s->kind() == fb::StepKind::launch) launched.insert(s->launch()->kernel());
  CHECK(body_attr(dom, "device-kernels") == std::to_string(launched.size()));
  CHECK(dom.find("ESTIMATED Adreno 630 at 675 MHz time") != std::string::npos);
  CHECK(dom.find("Emulator counts per kernel") != std::string::npos);
  CHECK(dom.find(">global_store_bytes<") != std::string::npos);
  CHECK(dom.find(">sy_waits<") != std::string::npos);
}

TEST_CASE("view: clicking a kernel outlines the buffers it writes and reads") {
  const std::string cap = capture_small_cnn(), html = scratch_path("small_cnn_select.html");
  check_success(cli_run({"view", cap, "-o", html}));
  const cli_result js = cli_run({"inspect", cap, "--json"});
  check_success(js);
  const JsonValue doc = json_parse(js.output);
  const JsonValue &buffers = doc.at("buffers");
  NetworkListener net;
  for (size_t step : {size_t(0), doc.at("steps").array.size() - 1}) {
    CAPTURE(step);
    std::string want;
    for (size_t j = 0; j < buffers.array.size(); j++) {
      bool uses = false;
      for (const char *k : {"writers", "readers"})
        for (const JsonValue &s : buffers[j].at(k).array) uses |= s.integer == step;
      if (uses) want += (want.empty() ? "" : ",") + std::to_string(j);
    }
    CHECK(!want.empty());
    const cli_result dom =
        chromium_run(net, file_url(html) + "#step=" + std::to_string(step), "--dump-dom");
    CHECK(body_attr(dom.output, "status") == "drawn");
    CHECK(body_attr(dom.output, "highlighted") == want);
  }
}

TEST_CASE("view: the checks can fail: a page that fetches is caught, a blank page has no ink") {
  const std::string html = scratch_path("fetches.html");
  const std::string page =
      "<!doctype html><html><body><img src=\"http://example.invalid/canary.png\"></body></html>";
  file_write(html, std::vector<uint8_t>(page.begin(), page.end()));
  NetworkListener net;
  chromium_run(net, file_url(html), "--screenshot=" + html + ".png");
  bool seen = false;
  for (const std::string &r : page_requests(net)) seen |= request_host(r) == "example.invalid";
  CHECK_MESSAGE(
      seen, "the listener did not see the page's request for http://example.invalid/canary.png");
  const Image img = png_decode(file_read(html + ".png"));
  CHECK(ink_measure(img, {0, 0, img.width, img.height}).share < 0.01);
}

TEST_CASE(
    "view: a real model (PaddleOCR's classifier) with --profile: measured times, drawn, no "
    "fetches") {
  const char *deps = std::getenv("CAPGRAPH_TEST_DEPS");
  const std::string onnx = std::string(deps ? deps : "") +
                           "/ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  struct stat st;
  REQUIRE_MESSAGE(
      stat(onnx.c_str(), &st) == 0,
      onnx << " is missing: scripts/fetch_test_deps.sh fetches it (ctest's test_deps_fetch)");
  const std::string cap = scratch_path("cls.cap"), html = scratch_path("cls.html");
  check_success(cli_run({"compile", onnx, "-o", cap, "--input-shape", "x=1x3x48x192"}, 120000));
  check_success(cli_run({"view", cap, "-o", html, "--profile", "--runs", "3"}, 60000));
  page_check(cap, html, "measured");
}

TEST_CASE("view: bad input fails with a message and leaves the output alone") {
  const std::string cap = capture_small_cnn();
  const std::string out = scratch_path("bad_input_view.html");
  check_clean_failure(cli_run({"view"}), {"usage"});
  check_clean_failure(cli_run({"view", cap}), {"-o"});
  check_clean_failure(cli_run({"view", cap, "-o"}), {"-o"});
  check_clean_failure(cli_run({"view", cap, "-o", out, "--runs", "0"}), {"--runs"});
  check_clean_failure(cli_run({"view", cap, "-o", out, "--frobnicate"}), {"--frobnicate"});
  check_clean_failure(cli_run({"view", cap, "-o", scratch_path("no_such_dir/view.html")}),
                      {"no_such_dir/view.html"});
  // An existing output survives a failed run unchanged, with no temporary left beside it.
  const std::string dir = scratch_path("view_out");
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  const std::string kept = dir + "/view.html";
  file_write(kept, {'o', 'l', 'd'});
  const std::vector<uint8_t> good = file_read(cap);
  const std::string truncated = scratch_path("truncated.cap"),
                    missing = scratch_path("missing.cap");
  file_write(truncated, std::vector<uint8_t>(good.begin(), good.begin() + long(good.size() / 2)));
  for (const std::string &bad : {truncated, missing, dir}) {
    CAPTURE(bad);
    check_clean_failure(cli_run({"view", bad, "-o", kept}), {bad});
    CHECK(file_read(kept) == std::vector<uint8_t>{'o', 'l', 'd'});
    CHECK(dir_list(dir) == std::vector<std::string>{"view.html"});
  }
}
