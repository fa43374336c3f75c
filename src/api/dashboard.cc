#include "api/dashboard.h"

namespace toposched::api {
namespace {

// Generated from web/*.{html,js,css} by CMake (ts_embed_text): each is one raw string literal.
constexpr std::string_view kIndexHtml =
#include "embedded_web_index_html.inc"
    ;
constexpr std::string_view kAppJs =
#include "embedded_web_app_js.inc"
    ;
constexpr std::string_view kAppCss =
#include "embedded_web_app_css.inc"
    ;

}  // namespace

const std::vector<WebAsset>& WebAssets() {
  static const std::vector<WebAsset> assets = {
      {"/", "text/html; charset=utf-8", kIndexHtml},
      {"/ui/app.js", "text/javascript; charset=utf-8", kAppJs},
      {"/ui/app.css", "text/css; charset=utf-8", kAppCss},
  };
  return assets;
}

const WebAsset* FindWebAsset(std::string_view path) {
  for (const WebAsset& a : WebAssets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace toposched::api
