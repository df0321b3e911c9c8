// The PCIe RX PHY tuning sequence as the model expects to see it written,
// expanded from the one definition in firmware/src/regs.h (which cites the
// source).
#include "asm2464_model.h"
#include "bridge_regs.h"

namespace capgraph::emu {

namespace {
struct PhyWrite {
  uint8_t kind, off, val;
};
#define PHY_ENTRY(kind, off, val) PhyWrite{kind, off, val},
const std::vector<PhyWrite> kPasses[] = {{PCIE_RXPHY_PASS_1(PHY_ENTRY)},
                                         {PCIE_RXPHY_PASS_2(PHY_ENTRY)},
                                         {PCIE_RXPHY_PASS_3(PHY_ENTRY)},
                                         {PCIE_RXPHY_PASS_4(PHY_ENTRY)},
                                         {PCIE_RXPHY_PASS_5(PHY_ENTRY)}};
#undef PHY_ENTRY
}  // namespace

const std::vector<std::pair<uint16_t, uint8_t>> &Asm2464::phy_tuning_sequence() {
  static const std::vector<std::pair<uint16_t, uint8_t>> seq = [] {
    const uint8_t lane[] = PCIE_RXPHY_LANE_HI, companion[] = PCIE_RXPHY_COMPANION_HI,
                  tail[] = PCIE_RXPHY_TAIL_0B;
    std::vector<std::pair<uint16_t, uint8_t>> out;
    for (const auto &pass : kPasses)
      for (int slice = 0; slice < PCIE_RXPHY_SLICES; ++slice)
        for (const PhyWrite &w : pass) {
          uint8_t hi = w.kind == PHY_COMPANION ? companion[slice] : lane[slice];
          uint8_t v = w.kind == PHY_LANE_TAIL ? tail[slice] : w.val;
          out.emplace_back(uint16_t(hi << 8 | w.off), v);
        }
    return out;
  }();
  return seq;
}

}  // namespace capgraph::emu
