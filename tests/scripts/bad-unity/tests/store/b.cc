// Planted for scripts/check-unity-names.py: an api test has a helper of this name.
namespace {

int Port() { return 2; }

}  // namespace
