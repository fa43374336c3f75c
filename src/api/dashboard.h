// The web dashboard's assets (web/ in the source tree), compiled into the binary and served by
// the daemon at "/" and "/ui/...": one binary to deploy, nothing fetched at run time.
#pragma once

#include <string_view>
#include <vector>

namespace toposched::api {

struct WebAsset {
  std::string_view path;          // the URL path it is served at, exactly
  std::string_view content_type;  // with its charset
  std::string_view body;
};

// Every asset, "/" (the page) first.
const std::vector<WebAsset>& WebAssets();

// The asset served at exactly `path`, or nullptr. Only these fixed paths exist: no URL maps to
// a file, so no path can reach outside them.
const WebAsset* FindWebAsset(std::string_view path);

// The headers every asset is served with: no caching across daemon versions, no MIME sniffing,
// and a content security policy that allows only the daemon's own scripts, styles and API.
inline constexpr std::string_view kWebCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

}  // namespace toposched::api
