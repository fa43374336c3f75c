// The kubelet-facing gRPC service (v1beta1.DevicePlugin) over the shared DeviceState: options,
// ListAndWatch (one device per GPU, NUMA node as topology, every health change streamed),
// GetPreferredAllocation, Allocate, PreStartContainer. One instance per gRPC server. Bad
// requests get INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION with the field named; the
// service keeps serving.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "core/status.h"
#include "deviceplugin/device_state.h"
#include "deviceplugin/v1beta1.grpc.pb.h"

namespace toposched::deviceplugin {

// The gRPC status of a project Status (code mapped, message kept).
grpc::Status ToGrpc(const Status& s);

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  explicit DevicePluginService(std::shared_ptr<DeviceState> state) : state_(std::move(state)) {}

  // Ends every ListAndWatch stream of this service (before its server shuts down).
  void EndStreams();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  std::shared_ptr<DeviceState> state_;
  std::atomic<bool> ending_{false};
};

}  // namespace toposched::deviceplugin
