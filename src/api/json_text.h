// Private to api: JSON text as the daemon writes it (store records, bodies built by hand):
// compact, and invalid UTF-8 in a user's strings replaced rather than thrown on.
#pragma once

#include <string>

namespace toposched::api {

template <class Json>
std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace toposched::api
