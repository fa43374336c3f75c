// deploy/kubernetes/device-plugin.yaml: the DaemonSet runs `toposched device-plugin` with flags
// the command takes, and mounts the kubelet's directory and /dev at the paths it gives the
// kubelet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace toposched::deviceplugin {
namespace {

struct Manifest {
  std::map<std::string, std::string> flags;       // --flag -> value
  std::map<std::string, std::string> mounts;      // volume name -> mountPath
  std::map<std::string, std::string> host_paths;  // volume name -> hostPath
};

Manifest LoadDevicePluginManifest() {
  const YAML::Node ds =
      YAML::LoadFile(std::string(TS_SOURCE_DIR) + "/deploy/kubernetes/device-plugin.yaml");
  Manifest m;
  const YAML::Node pod = ds["spec"]["template"]["spec"];
  const YAML::Node c = pod["containers"][0];
  for (size_t i = 1; i < c["args"].size(); ++i) {
    const std::string a = c["args"][i].as<std::string>();
    const size_t eq = a.find('=');
    m.flags[a.substr(0, eq)] = eq == std::string::npos ? "" : a.substr(eq + 1);
  }
  for (const YAML::Node& v : c["volumeMounts"]) {
    m.mounts[v["name"].as<std::string>()] = v["mountPath"].as<std::string>();
  }
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["hostPath"])
      m.host_paths[v["name"].as<std::string>()] = v["hostPath"]["path"].as<std::string>();
  }
  return m;
}

TEST(DevicePluginManifestTest, TheKubeletDirectoryIsMountedWhereTheFlagSays) {
  Manifest m = LoadDevicePluginManifest();
  EXPECT_EQ(m.flags["--kubelet-dir"], m.mounts["device-plugins"] + "/");
  EXPECT_EQ(m.mounts["device-plugins"], m.host_paths["device-plugins"]);
}

TEST(DevicePluginManifestTest, DeviceNodesKeepTheirHostPaths) {
  Manifest m = LoadDevicePluginManifest();
  EXPECT_EQ(m.flags["--dev-root"], m.mounts["dev"]);
  EXPECT_EQ(m.mounts["dev"], m.host_paths["dev"]);
}

TEST(DevicePluginManifestTest, TheDriverFilesAreUnderTheProcRoot) {
  Manifest m = LoadDevicePluginManifest();
  EXPECT_EQ(m.mounts["nvidia-proc"], m.flags["--proc-root"] + "/driver/nvidia");
  EXPECT_EQ(m.host_paths["nvidia-proc"], "/proc/driver/nvidia");
}

// The gang's choice needs the node's name and the right to list pods.
TEST(DevicePluginManifestTest, ThePluginKnowsItsNodeAndMayListPods) {
  const std::vector<YAML::Node> docs =
      YAML::LoadAllFromFile(std::string(TS_SOURCE_DIR) + "/deploy/kubernetes/device-plugin.yaml");
  ASSERT_GE(docs.size(), 4u);
  const YAML::Node pod = docs[0]["spec"]["template"]["spec"];
  std::string node_env;
  for (const YAML::Node& e : pod["containers"][0]["env"]) {
    if (e["name"].as<std::string>() == "NODE_NAME") {
      node_env = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
    }
  }
  EXPECT_EQ(node_env, "spec.nodeName");
  const std::string account = pod["serviceAccountName"].as<std::string>();
  bool may_list = false;
  for (const YAML::Node& d : docs) {
    if (d["kind"].as<std::string>() != "ClusterRoleBinding") continue;
    if (d["subjects"][0]["name"].as<std::string>() != account) continue;
    for (const YAML::Node& r : docs) {
      if (r["kind"].as<std::string>() != "ClusterRole" ||
          r["metadata"]["name"].as<std::string>() != d["roleRef"]["name"].as<std::string>()) {
        continue;
      }
      for (const YAML::Node& rule : r["rules"]) {
        may_list = may_list || (rule["resources"][0].as<std::string>() == "pods" &&
                                rule["verbs"][0].as<std::string>() == "list");
      }
    }
  }
  EXPECT_TRUE(may_list);
}

#ifdef TS_CLI
TEST(DevicePluginManifestTest, EveryFlagIsOneTheCommandTakes) {
  std::string help;
  if (FILE* p = popen((std::string(TS_CLI) + " device-plugin --help").c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) help.append(buf, n);
    pclose(p);
  }
  for (const auto& [flag, value] : LoadDevicePluginManifest().flags) {
    EXPECT_THAT(help, ::testing::HasSubstr(flag)) << flag;
  }
}
#endif

}  // namespace
}  // namespace toposched::deviceplugin
