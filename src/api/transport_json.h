// The JSON of a placement's predicted NCCL transports (sched::TransportPlan), one shape for the
// explain API and `toposched place --json`: "transports" ([{"dimension", "transport", "hops",
// "example", "via"}]), "nccl_env" ({"NCCL_IB_HCA"} or {}) and "transport_warnings".
#pragma once

#include "placer/transports.h"

namespace toposched::api {

// Adds the three fields to `j`; Json is nlohmann::json or nlohmann::ordered_json.
template <class Json>
void AddTransportPlan(const sched::TransportPlan& plan, Json& j) {
  Json hops = Json::array();
  for (const sched::HopTransport& h : plan.hops) {
    hops.push_back({{"dimension", h.dimension},
                    {"transport", h.transport},
                    {"hops", h.hops},
                    {"example", h.example},
                    {"via", h.via}});
  }
  j["transports"] = hops;
  j["nccl_env"] =
      plan.nccl_ib_hca.empty() ? Json::object() : Json{{"NCCL_IB_HCA", plan.nccl_ib_hca}};
  j["transport_warnings"] = plan.warnings;
}

}  // namespace toposched::api
