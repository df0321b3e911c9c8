// capgraph-flash: standalone flasher until `capgraph flash` lands in cli/.
//   capgraph-flash IMAGE [--dry-run] [--device ...]   |   capgraph-flash devices
#include <cstring>

#include "flash.h"

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "devices") == 0)
    return capgraph::bridge::devices_print_bridges(stdout);
  return capgraph::bridge::flash_main(argc, argv);
}
