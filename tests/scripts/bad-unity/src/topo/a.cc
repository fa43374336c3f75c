// Planted: a helper that hides core's Quote in a unity batch.
#include <string>
namespace toposched::topo {
namespace {
std::string Quote(const std::string& s) { return "'" + s + "'"; }
}  // namespace
}  // namespace toposched::topo
