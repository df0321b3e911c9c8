// gfx1100_firmware_dir — the synthetic gfx1100 firmware files
// (am_firmware_synthetic.h) written once per test process into a temporary
// folder, for the doctest suites that boot the fake GPU.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "am_firmware_synthetic.h"

namespace capgraph::emu {

inline std::string synthetic_fw_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path d =
        fs::temp_directory_path() / ("capgraph_gfx1100_fw_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::string err;
    REQUIRE_MESSAGE(am::synthetic_firmware_write(d.string(), &err), err);
    return d.string();
  }();
  return dir;
}

}  // namespace capgraph::emu
