// The plugin's options and the driver facts that name its devices.
#include "deviceplugin/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "deviceplugin/devices.h"
#include "testing/device_plugin.h"
#include "testing/status_matchers.h"

namespace toposched::deviceplugin {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

struct BadOption {
  const char* what;
  void (*change)(PluginOptions&);
  const char* message;
};

TEST(PluginOptionsTest, DefaultsAreValid) {
  EXPECT_THAT(PluginOptions{}.Validate(), testing::IsOk());
  EXPECT_EQ(PluginOptions{}.socket_path(), "/var/lib/kubelet/device-plugins/toposched-gpu.sock");
  EXPECT_EQ(PluginOptions{}.kubelet_socket_path(), "/var/lib/kubelet/device-plugins/kubelet.sock");
}

TEST(PluginOptionsTest, BadOptionsAreRefusedWithTheOptionNamed) {
  const std::vector<BadOption> cases = {
      {"no domain", [](PluginOptions& o) { o.resource_name = "gpu"; }, "--resource-name"},
      {"upper-case domain", [](PluginOptions& o) { o.resource_name = "NVIDIA.com/gpu"; },
       "--resource-name"},
      {"two slashes", [](PluginOptions& o) { o.resource_name = "a.io/b/c"; }, "--resource-name"},
      {"relative dir", [](PluginOptions& o) { o.kubelet_dir = "device-plugins"; },
       "--kubelet-dir: expected an absolute directory"},
      {"endpoint path", [](PluginOptions& o) { o.endpoint = "a/b.sock"; }, "--endpoint"},
      {"endpoint suffix", [](PluginOptions& o) { o.endpoint = "plugin"; }, "--endpoint"},
      {"kubelet's socket", [](PluginOptions& o) { o.endpoint = "kubelet.sock"; }, "--endpoint"},
      {"long path", [](PluginOptions& o) { o.kubelet_dir = "/" + std::string(120, 'd'); },
       "more than a Unix socket address holds"},
      {"check interval", [](PluginOptions& o) { o.restart_check_ms = 0; }, "restart_check_ms"},
      {"register timeout", [](PluginOptions& o) { o.register_timeout_ms = 10; },
       "register_timeout_ms"},
      {"cdi kind", [](PluginOptions& o) { o.cdi_kind = "gpu"; }, "--cdi-kind"},
      {"choice annotation", [](PluginOptions& o) { o.choice_annotation = "gpus"; },
       "--choice-annotation"},
      {"topo container path", [](PluginOptions& o) { o.nccl_topo_container_path = "x.xml"; },
       "nccl_topo_container_path"},
  };
  for (const BadOption& c : cases) {
    PluginOptions o;
    c.change(o);
    EXPECT_THAT(o.Validate(), StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.what;
  }
}

TEST(PluginOptionsTest, ACreateWithBadOptionsFails) {
  PluginOptions o;
  o.resource_name = "gpu";
  topo::NodeTopology t = testing::LoadSample(testing::SamplePath(testing::kDgxH100Sample));
  EXPECT_THAT(DevicePlugin::Create(t, {}, o),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("--resource-name")));
}

TEST(DriverGpusTest, BusIdsAreNormalised) {
  EXPECT_EQ(NormalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizeBusId("0000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(NormalizeBusId("18:00.0"), "0000:18:00.0");
  EXPECT_EQ(NormalizeBusId("GPU0"), "");
}

class DriverGpusFilesTest : public ::testing::Test {
 protected:
  void Write(const std::string& bus, const std::string& text) {
    const std::string d = dir_.path() + "/driver/nvidia/gpus/" + bus;
    std::filesystem::create_directories(d);
    std::ofstream(d + "/information") << text;
  }
  topo::NodeTopology TwoGpus() {
    topo::NodeTopology t =
        testing::LoadSample(testing::SamplePath("nvidia-smi/07a-2gpu-nv2-workstation-stas00.txt"));
    t.gpus[0].pci_bus_id = "00000000:3B:00.0";
    t.gpus[1].pci_bus_id = "00000000:AF:00.0";
    return t;
  }
  testing::SocketDir dir_;
};

TEST_F(DriverGpusFilesTest, UuidAndMinorAreRead) {
  Write("0000:3b:00.0",
        "Model: \t\t GPU\nGPU UUID: \t GPU-1a2b3c4d-0000-1111-2222-333344445555\n"
        "Device Minor: \t 2\n");
  auto driver = ReadDriverGpus(dir_.path(), TwoGpus());
  ASSERT_THAT(driver, testing::IsOk());
  ASSERT_EQ(driver->size(), 1u);  // the second GPU has no file: left out
  EXPECT_EQ(driver->at("0000:3b:00.0").uuid, "GPU-1a2b3c4d-0000-1111-2222-333344445555");
  EXPECT_EQ(driver->at("0000:3b:00.0").minor, 2);
}

TEST_F(DriverGpusFilesTest, AMalformedUuidIsRefusedWithFileAndLine) {
  Write("0000:af:00.0", "Model: x\nGPU UUID: \t not-a-uuid\n");
  EXPECT_THAT(ReadDriverGpus(dir_.path(), TwoGpus()),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("0000:af:00.0/information:2: GPU UUID: expected GPU-<hex>")));
}

TEST_F(DriverGpusFilesTest, AMalformedMinorIsRefused) {
  Write("0000:af:00.0", "Device Minor: \t 9999\n");
  EXPECT_THAT(ReadDriverGpus(dir_.path(), TwoGpus()),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("Device Minor: expected 0..255")));
}

TEST_F(DriverGpusFilesTest, TheSameUuidTwiceIsRefused) {
  std::map<std::string, DriverGpu> driver = {{"0000:3b:00.0", {"GPU-aa", 0}},
                                             {"0000:af:00.0", {"GPU-aa", 1}}};
  EXPECT_THAT(DeviceTable::Create(TwoGpus(), driver),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("is another GPU's too")));
}

#ifdef TS_CLI
// Runs the binary; stdout and stderr together, the exit code in `rc`.
std::string RunCli(const std::string& args, int* rc) {
  std::string out;
  if (FILE* p = popen((std::string(TS_CLI) + " " + args + " 2>&1").c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    *rc = WEXITSTATUS(pclose(p));
  }
  return out;
}

TEST(DevicePluginCommandTest, DryRunListsTheDevices) {
  int rc = -1;
  const std::string out = RunCli("device-plugin --dry-run --proc-root /nonexistent --topo " +
                                     testing::SamplePath(testing::kDgxH100Sample),
                                 &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("device 0: GPU 0, NUMA 0, healthy"));
  EXPECT_THAT(out, HasSubstr("device 7: GPU 7, NUMA 1, healthy"));
}

TEST(DevicePluginCommandTest, ABadResourceNameIsRefused) {
  int rc = -1;
  const std::string out = RunCli("device-plugin --dry-run --resource-name gpu --topo " +
                                     testing::SamplePath(testing::kDgxH100Sample),
                                 &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(out, HasSubstr("--resource-name: expected <vendor domain>/<name>"));
}

TEST(DevicePluginCommandTest, ARelativeKubeletDirIsRefused) {
  int rc = -1;
  const std::string out = RunCli("device-plugin --dry-run --kubelet-dir plugins --topo " +
                                     testing::SamplePath(testing::kDgxH100Sample),
                                 &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(out, HasSubstr("--kubelet-dir: expected an absolute directory"));
}

TEST(DevicePluginCommandTest, TheGangChoiceIsOnWithANodeAndAnApiServer) {
  int rc = -1;
  std::string out = RunCli(
      "device-plugin --dry-run --proc-root /nonexistent --node-name gpu001 --kube-api-server " +
          std::string("http://127.0.0.1:6443 --topo ") +
          testing::SamplePath(testing::kDgxH100Sample),
      &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("following the gang's choice (toposched.io/gpus) for pods on gpu001"));
  out = RunCli(
      "device-plugin --dry-run --proc-root /nonexistent --node-name gpu001 "
      "--kube-api-server 10.0.0.1:443 --topo " +
          testing::SamplePath(testing::kDgxH100Sample),
      &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(out, HasSubstr("--kube-api-server"));
  EXPECT_THAT(out, HasSubstr("expected http(s)://host[:port]"));
}
#endif

}  // namespace
}  // namespace toposched::deviceplugin
