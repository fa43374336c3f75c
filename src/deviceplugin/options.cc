#include "deviceplugin/options.h"

#include <cctype>
#include <string_view>

#include "core/strings.h"

namespace toposched::deviceplugin {

namespace {

// sockaddr_un::sun_path holds 108 bytes on Linux, one of them the terminating NUL.
constexpr size_t kMaxUnixSocketPath = 107;

std::string JoinDir(const std::string& dir, const std::string& file) {
  if (!dir.empty() && dir.back() == '/') return dir + file;
  return dir + "/" + file;
}

bool IsLowerAlnum(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}

// A DNS subdomain (RFC 1123, as Kubernetes checks resource-name prefixes): dot-separated
// labels of lowercase letters, digits and '-', each starting and ending alphanumeric.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (const std::string& label : Split(s, '.')) {
    if (label.empty() || label.size() > 63) return false;
    if (!IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
  }
  return true;
}

// The name part of a qualified name: up to 63 of [A-Za-z0-9-_.], alphanumeric at both ends.
bool IsQualifiedNamePart(std::string_view s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsPrefixedName(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  return IsDnsSubdomain(s.substr(0, slash)) && IsQualifiedNamePart(s.substr(slash + 1));
}

}  // namespace

std::string PluginOptions::socket_path() const { return JoinDir(kubelet_dir, endpoint); }
std::string PluginOptions::kubelet_socket_path() const {
  return JoinDir(kubelet_dir, kKubeletSocket);
}

Status PluginOptions::Validate() const {
  if (!IsPrefixedName(resource_name)) {
    return InvalidArgumentError("--resource-name: expected <vendor domain>/<name> such as " +
                                std::string("nvidia.com/gpu, got ") + Quote(resource_name));
  }
  if (kubelet_dir.empty() || kubelet_dir.front() != '/') {
    return InvalidArgumentError("--kubelet-dir: expected an absolute directory, got " +
                                Quote(kubelet_dir));
  }
  if (endpoint.size() < 6 || endpoint.find('/') != std::string::npos ||
      endpoint.substr(endpoint.size() - 5) != ".sock" || endpoint == kKubeletSocket) {
    return InvalidArgumentError(
        "--endpoint: expected a socket file name ending in .sock (not kubelet.sock), got " +
        Quote(endpoint));
  }
  for (const std::string& path : {socket_path(), kubelet_socket_path()}) {
    if (path.size() > kMaxUnixSocketPath) {
      return InvalidArgumentError("--kubelet-dir: socket path " + Quote(path) + " is " +
                                  std::to_string(path.size()) +
                                  " bytes, more than a Unix socket address holds (107)");
    }
  }
  if (restart_check_ms < 10 || restart_check_ms > 60000) {
    return InvalidArgumentError("restart_check_ms: expected 10..60000, got " +
                                std::to_string(restart_check_ms));
  }
  if (register_timeout_ms < 100 || register_timeout_ms > 60000) {
    return InvalidArgumentError("register_timeout_ms: expected 100..60000, got " +
                                std::to_string(register_timeout_ms));
  }
  if (!IsPrefixedName(cdi_kind)) {
    return InvalidArgumentError(
        "--cdi-kind: expected <vendor>/<class> such as nvidia.com/gpu, got " + Quote(cdi_kind));
  }
  if (nccl_topo_container_path.empty() || nccl_topo_container_path.front() != '/') {
    return InvalidArgumentError("nccl_topo_container_path: expected an absolute path, got " +
                                Quote(nccl_topo_container_path));
  }
  if (!IsPrefixedName(choice_annotation)) {
    return InvalidArgumentError(
        "--choice-annotation: expected <prefix>/<name> such as toposched.io/gpus, got " +
        Quote(choice_annotation));
  }
  return OkStatus();
}

}  // namespace toposched::deviceplugin
