// The page `capgraph view` writes: one self-contained HTML file (inline CSS and JS, no fetches)
// that draws the kernel timeline, the memory plan and the kernel table from embedded JSON.
#pragma once
#include <string>

namespace capgraph {

// The whole page with `data_json` in its <script type="application/json" id="data"> element.
// data_json must not contain '<' (json_quote escapes it), so no name can end that element early;
// an Error is thrown when it does. Its shape: {"capture": <inspect --json document>,
// "model": NAME, "times": {"kind": "estimated"|"measured", "ms": [one per step], "note": TEXT},
// and from `view --device` "device": {"device", "hardware", "estimate", "estimated_total_us",
// "kernels": [{kernel, name, dispatches, estimated_us, bound, counts: {NAME: N}}],
// "step_kernel": [index into kernels per step, -1 for none]}}.
std::string view_page_html(const std::string &data_json);

}  // namespace capgraph
