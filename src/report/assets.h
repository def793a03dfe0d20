#pragma once
// Files inlined into the binary at build time (src/report/CMakeLists.txt): the HTML
// template, our stylesheet and script (web/js/*.js, concatenated), and the pinned
// charting libraries from npm
// (web/package-lock.json). Defined in the generated report_assets.cc.
#include <cstddef>
#include <string_view>

namespace attngeom::report::assets {

extern const unsigned char report_template[];
extern const std::size_t report_template_size;
extern const unsigned char report_css[];
extern const std::size_t report_css_size;
extern const unsigned char report_js[];
extern const std::size_t report_js_size;
extern const unsigned char vega_js[];
extern const std::size_t vega_js_size;
extern const unsigned char vega_lite_js[];
extern const std::size_t vega_lite_js_size;
extern const unsigned char vega_embed_js[];
extern const std::size_t vega_embed_js_size;

inline std::string_view view(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace attngeom::report::assets
