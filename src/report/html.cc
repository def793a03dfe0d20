#include "report/html.h"

#include "report/assets.h"
#include "util/error.h"

namespace attngeom::report {

namespace {

std::string inline_script(std::string_view code) {
  std::string out = "<script>";
  out += code;
  out += "\n</script>\n";
  return out;
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& data) {
  // Invalid UTF-8 (e.g. in a path from run.json) is replaced, not fatal.
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";  // '<' only occurs inside JSON strings, where this escape is valid
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const nlohmann::json& data) {
  using assets::view;
  const std::string_view tmpl = view(assets::report_template, assets::report_template_size);
  const std::string title = escape_html(data.value("title", std::string("attngeom report")));
  const std::string generator = escape_html(data.value("generator", std::string("attngeom")));
  std::string out;
  out.reserve(assets::vega_js_size + assets::vega_lite_js_size + assets::vega_embed_js_size + (1u << 20));
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = tmpl.find("@@", pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find("@@", open + 2);
    ATTNGEOM_CHECK(close != std::string_view::npos);
    out += tmpl.substr(pos, open - pos);
    const std::string_view key = tmpl.substr(open + 2, close - open - 2);
    if (key == "TITLE") {
      out += title;
    } else if (key == "GENERATOR") {
      out += generator;
    } else if (key == "STYLE") {
      out += "<style>\n";
      out += view(assets::report_css, assets::report_css_size);
      out += "</style>";
    } else if (key == "DATA") {
      out += "<script type=\"application/json\" id=\"attngeom-data\">";
      out += script_safe_json(data);
      out += "</script>";
    } else if (key == "LIBRARIES") {
      out += inline_script(view(assets::vega_js, assets::vega_js_size));
      out += inline_script(view(assets::vega_lite_js, assets::vega_lite_js_size));
      out += inline_script(view(assets::vega_embed_js, assets::vega_embed_js_size));
    } else if (key == "SCRIPT") {
      // web/js/*.js share one scope: this function's.
      std::string script = "(function () {\n'use strict';\n";
      script += view(assets::report_js, assets::report_js_size);
      script += "})();";
      out += inline_script(script);
    } else {
      ATTNGEOM_CHECK(false && "unknown placeholder in web/report.html");
    }
    pos = close + 2;
  }
  out += tmpl.substr(pos);
  return out;
}

}  // namespace attngeom::report
