// The kubelet device plugin's options: which resource it serves, where the kubelet's
// device-plugin directory is, and what Allocate injects besides the environment (device nodes,
// RDMA devices, the NCCL topology file, CDI names). Knows nothing of gRPC or of selection.
#pragma once

#include <string>

#include "core/status.h"

namespace toposched::deviceplugin {

// The Device Plugin API version this plugin speaks (the kubelet's `v1beta1`).
inline constexpr char kApiVersion[] = "v1beta1";
// The kubelet's registration socket, a file of the device-plugin directory (fixed by the API).
inline constexpr char kKubeletSocket[] = "kubelet.sock";

struct PluginOptions {
  // Extended resource served, "<vendor domain>/<name>". nvidia.com/gpu replaces NVIDIA's plugin
  // on a node (only one plugin may register a resource name with a kubelet).
  std::string resource_name = "nvidia.com/gpu";
  // The kubelet's device-plugin directory: kubelet.sock is in it, the plugin's socket goes in it.
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins/";
  // The plugin's socket, a file name inside kubelet_dir.
  std::string endpoint = "toposched-gpu.sock";
  // How often (ms) kubelet.sock and the plugin's socket are checked for a kubelet restart (the
  // kubelet removes every plugin socket and creates kubelet.sock anew when it starts). One second
  // keeps a restarted kubelet without GPUs for at most about a second plus its own sync.
  int restart_check_ms = 1000;
  // Deadline (ms) of one Register call. The kubelet answers at once when it is up; five seconds
  // covers a kubelet busy starting, and is what the API's own example plugins wait.
  int register_timeout_ms = 5000;

  // Allocate: also name the GPUs as CDI devices "<cdi_kind>=<device id>" (container runtimes
  // with CDI enabled inject them from the node's CDI specs).
  bool cdi = false;
  std::string cdi_kind = "nvidia.com/gpu";
  // Allocate: the node's NCCL topology file (a host path; empty = none), mounted read-only at
  // nccl_topo_container_path with NCCL_TOPO_FILE pointing at it.
  std::string nccl_topo_file;
  std::string nccl_topo_container_path = "/etc/toposched/nccl-topo.xml";
  // Where the host's device nodes (nvidia*, infiniband/*) are, as the plugin sees them; the
  // kubelet is given these paths, so in a container mount the host's /dev at the same path.
  std::string dev_root = "/dev";
  // Where GPU facts are read (UUID and device minor: <proc_root>/driver/nvidia/gpus/<bus id>/
  // information) and RDMA character devices found (<sys_root>/class/infiniband/<nic>/device/
  // infiniband_verbs/uverbs<N>).
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";

  // The gang's choice (docs/kubernetes.md, "How the gang's choice reaches the container"): the
  // annotation the scheduler extender writes on a pod at bind (api::ExtenderOptions::
  // gpus_annotation_key), read back when the kubelet admits the pod.
  std::string choice_annotation = "toposched.io/gpus";

  std::string socket_path() const;          // kubelet_dir/endpoint
  std::string kubelet_socket_path() const;  // kubelet_dir/kubelet.sock
  // InvalidArgument naming the option: a resource name that is not "<DNS subdomain>/<name>", a
  // relative directory, an endpoint that is not a plain "*.sock" file name (or is kubelet.sock),
  // a socket path longer than a Unix socket address holds (107 bytes), a check interval outside
  // 10 ms .. 60 s, a register timeout outside 100 ms .. 60 s, a CDI kind that is not
  // "<vendor>/<class>", an NCCL topology container path that is not absolute, a choice
  // annotation that is not "<prefix>/<name>".
  Status Validate() const;
};

}  // namespace toposched::deviceplugin
