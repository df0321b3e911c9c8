// am_pci — what the AM driver needs from the PCI function it owns: its BARs
// (read and write dwords; nothing is CPU-mapped, because behind the USB
// bridge nothing can be) and a staging memory the GPU reaches by bus address
// (the bridge's 512 KiB SRAM at bus 0x200000), through which the PSP reads
// firmware. drivers/usb (usb_pci.h, pci_function_usb) implements it over the
// bridge; targets/amd/fake/gfx1100 implements it directly on the fake GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace capgraph::am {

// BAR indices of an AMD GPU (Linux amdgpu_device.c: BAR0 VRAM aperture,
// BAR2 doorbells, BAR5 registers; tinygrad amdev.py map_bar).
constexpr int kBarVram = 0, kBarDoorbell = 2, kBarMmio = 5;

class pci_function {
 public:
  virtual ~pci_function() = default;
  // "usb 0badcafe 04:00.0 1002:744c", for messages.
  virtual std::string name() const = 0;
  virtual uint64_t bar_size(int bar) const = 0;
  // n dwords at byte offset off of a BAR. False with a message naming the
  // BAR, the offset and the cause (the bridge unplugged, a device that does
  // not answer).
  virtual bool bar_read(int bar, uint64_t off, uint32_t *dw, size_t n, std::string *err) = 0;
  virtual bool bar_write(int bar, uint64_t off, const uint32_t *dw, size_t n, std::string *err) = 0;
  virtual uint64_t staging_bus_addr() const = 0;
  virtual uint64_t staging_bytes() const = 0;
  // Writes n bytes at off (a multiple of 16 KiB); the implementation pads
  // to its transfer granule.
  virtual bool staging_write(uint64_t off, const uint8_t *p, size_t n, std::string *err) = 0;

  // Staging -> host, for copy-out by the GPU's SDMA (tinygrad ops_amd.py
  // `_copyout` on USB): the host arms a read of n bytes at off (off a
  // multiple of 16 KiB, n of 512), the GPU copies into the window and then
  // writes a dword at staging_trigger_bus_addr(), which is what lets the
  // bridge start sending; collect then takes exactly the armed bytes
  // (bounded wait). A function without this path answers 0 and false.
  // Writes that use no bulk transfer (one TLP per dword over control
  // transfers on the bridge): the only writes allowed between the arm and
  // the collect, because the bulk IN pipe then carries the staging data.
  virtual bool bar_write_without_bulk(int bar, uint64_t off, const uint32_t *dw, size_t n,
                                      std::string *err) {
    return bar_write(bar, off, dw, n, err);
  }
  virtual uint64_t staging_trigger_bus_addr() const { return 0; }
  // Waits with the host asleep until the 64-bit value at byte offset off of BAR `bar` reaches
  // target (wrap-safe), the register at fault_off of BAR `fault_bar` reads non-zero, or timeout_ms
  // passes: the device behind watches (the USB bridge's firmware, protocol >= 1.3). `unsupported`
  // when it cannot, and the caller polls; `error` with *err when a transfer failed.
  enum class watch_outcome { reached, fault, timeout, unsupported, error };
  virtual watch_outcome watch64(int bar, uint64_t off, uint64_t target, int fault_bar,
                                uint64_t fault_off, unsigned timeout_ms, uint64_t *value,
                                uint32_t *fault, std::string *err) {
    return watch_outcome::unsupported;
  }
  virtual bool staging_read_arm(uint64_t off, size_t n, std::string *err) {
    *err = name() + ": no reads from the staging window";
    return false;
  }
  virtual bool staging_read_collect(uint8_t *p, size_t n, std::string *err) {
    *err = name() + ": no reads from the staging window";
    return false;
  }
};

}  // namespace capgraph::am
