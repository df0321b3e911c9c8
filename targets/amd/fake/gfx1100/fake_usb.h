// fake_usb — registers `--device fake-usb` (see fake_usb.cpp).
#pragma once

namespace capgraph::amd {
void fake_usb_register();
}
