// flash — `capgraph flash IMAGE [--dry-run] [--device SEL] [--backup FILE]
// [--config-restore FILE]`: put bridge firmware on an ASM2464PD without
// bricking it.
//
// Two paths, chosen by what the device is running:
//  - our firmware (BRIDGE_USB_VID:PID): back up the 256 config bytes, erase
//    the 4 KiB sectors the image needs, write the config back, write the
//    image pages last-to-first (the length word at 0x100 goes last, so an
//    interrupted write leaves an erased length the boot ROM rejects), read
//    everything back and compare.
//  - the stock ASMedia firmware/bootloader (174C:2464/2463): SCSI vendor
//    CDBs over Bulk-Only Transport: E1 config blocks (only with
//    --config-restore), E3 0x50 the first 0xFF00 image bytes, E3 0xD0 the
//    rest (sources: tinygrad/asm2464pd-firmware flash.py), then read back
//    with E0 (config) / E2 (image) and compare, and only then E8 0x51
//    commit. E0/E2 exist (src/app/vendor.c names them) but their CDB layout
//    is not public: we assume it mirrors E1/E3 (firmware/NOTES.md). A
//    bootloader that refuses them leaves the bridge written, unverified and
//    uncommitted, and the command fails saying so.
// Recovery: if power is lost mid-flash the boot ROM refuses the image (its
// CRC fails) and the chip comes up in the stock bootloader; run the same
// command again with --config-restore BACKUP and it takes the second path.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bridge_transport.h"

namespace capgraph::bridge {

struct FlashOptions {
  bool dry_run = false;
  std::string device;          // serial, VID:PID, or "" for the only one
  std::string backup_path;     // config backup (default bridge-config-SERIAL.bin)
  std::string config_restore;  // config bytes to write on the bootloader path
};

struct FlashResult {
  bool ok = false;
  std::string message;  // what went wrong, or a summary
};

// Both paths take the transport, so tests drive them through the emulator.
FlashResult flash_via_firmware(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                               const FlashOptions &opt, std::FILE *log);
FlashResult flash_via_bootloader(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                                 const FlashOptions &opt, std::FILE *log);
// Picks the path from the transport's USB ids.
FlashResult flash_image(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                        const FlashOptions &opt, std::FILE *log);

// Reads and validates an image file (format, sum, CRC, size, ours, chip).
bool flash_load_image(const std::string &path, std::vector<uint8_t> *image, std::string *error);

// Entry points for the capgraph CLI (argv[0] is the subcommand name):
//   capgraph flash IMAGE [--dry-run] [--device SEL] [--backup F] [--config-restore F]
//   capgraph devices    (prints devices_print_bridges)
// Return a process exit code; errors go to stderr as one actionable line.
int flash_main(int argc, char **argv);
int devices_print_bridges(std::FILE *out);

}  // namespace capgraph::bridge
