// Planted: a second helper named like a.cc's, with another signature.
#include <string>
namespace toposched::topo {
namespace {
int Quote(int n) { return n; }
}  // namespace
}  // namespace toposched::topo
