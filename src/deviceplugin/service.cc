#include "deviceplugin/service.h"

#include <chrono>
#include <string>
#include <vector>

namespace toposched::deviceplugin {

namespace {

// How long a ListAndWatch stream waits for a health change before it checks whether the
// kubelet has gone (a closed stream is not signalled to the waiting thread) or the server is
// ending. A second bounds how long a dead stream holds a server thread.
constexpr std::chrono::milliseconds kStreamPoll{1000};

// The API's health strings (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 constants).
constexpr char kHealthy[] = "Healthy";
constexpr char kUnhealthy[] = "Unhealthy";

v1beta1::ListAndWatchResponse DeviceList(const std::vector<GpuDevice>& devices) {
  v1beta1::ListAndWatchResponse out;
  for (const GpuDevice& d : devices) {
    v1beta1::Device* pd = out.add_devices();
    pd->set_id(d.id);
    pd->set_health(d.healthy ? kHealthy : kUnhealthy);
    if (d.numa) pd->mutable_topology()->add_nodes()->set_id(*d.numa);
  }
  return out;
}

std::vector<std::string> Strings(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return std::vector<std::string>(field.begin(), field.end());
}

}  // namespace

grpc::Status ToGrpc(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, s.message());
    case StatusCode::kNotFound:
      return grpc::Status(grpc::StatusCode::NOT_FOUND, s.message());
    case StatusCode::kFailedPrecondition:
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, s.message());
    case StatusCode::kUnavailable:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, s.message());
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, s.message());
  }
}

void DevicePluginService::EndStreams() {
  ending_ = true;
  state_->Wake();
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(false);
  response->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  uint64_t sent = 0;
  while (!ending_ && !context->IsCancelled()) {
    uint64_t version = 0;
    const std::vector<GpuDevice> devices = state_->Snapshot(&version);
    if (version != sent) {
      if (!writer->Write(DeviceList(devices))) return grpc::Status::OK;  // the kubelet left
      sent = version;
    }
    state_->WaitForChange(sent, kStreamPoll);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const v1beta1::ContainerPreferredAllocationRequest& r = request->container_requests(i);
    const std::vector<std::string> available = Strings(r.available_deviceids());
    const std::vector<std::string> must = Strings(r.must_include_deviceids());
    auto ids = state_->PreferredForPod(available, must, r.allocation_size());
    if (!ids.ok()) {
      return ToGrpc(ids.status().WithPrefix("container_requests[" + std::to_string(i) + "]"));
    }
    v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    for (const std::string& id : *ids) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const std::vector<std::string> ids = Strings(request->container_requests(i).devicesids());
    auto a = state_->Allocate(ids);
    if (!a.ok()) {
      response->Clear();  // nothing half-answered
      return ToGrpc(a.status().WithPrefix("container_requests[" + std::to_string(i) + "]"));
    }
    state_->NoteAllocated(static_cast<int>(ids.size()));
    v1beta1::ContainerAllocateResponse* out = response->add_container_responses();
    for (const auto& [k, v] : a->envs) (*out->mutable_envs())[k] = v;
    for (const MountSpec& m : a->mounts) {
      v1beta1::Mount* pm = out->add_mounts();
      pm->set_container_path(m.container_path);
      pm->set_host_path(m.host_path);
      pm->set_read_only(m.read_only);
    }
    for (const DeviceNodeSpec& d : a->devices) {
      v1beta1::DeviceSpec* pd = out->add_devices();
      pd->set_container_path(d.container_path);
      pd->set_host_path(d.host_path);
      pd->set_permissions(d.permissions);
    }
    for (const std::string& name : a->cdi_devices) out->add_cdi_devices()->set_name(name);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;  // pre_start_required is false: the kubelet does not call it
}

}  // namespace toposched::deviceplugin
