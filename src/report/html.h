#pragma once
// Assembles the self-contained report: the template with the stylesheet, the data
// object, the charting libraries and our script (web/js/*.js) inlined. No external
// reference.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attngeom::report {

// `data` from build_report_data; its "title" and "generator" also fill the page head.
std::string render_html(const nlohmann::json& data);

// Text safe inside HTML element content and attribute values.
std::string escape_html(std::string_view text);
// JSON text safe inside <script type="application/json">: every '<' written as \u003c.
std::string script_safe_json(const nlohmann::json& data);

}  // namespace attngeom::report
