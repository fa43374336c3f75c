// Planted for scripts/check-unity-names.py: a helper that a store test defines too.
namespace {

int Port() { return 1; }

}  // namespace
