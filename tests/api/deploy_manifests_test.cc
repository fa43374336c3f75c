// deploy/kubernetes: the kube-scheduler configuration names the extender verbs the server
// routes, with the settings the extender depends on; the ConfigMap carries the same
// configuration and a cluster spec that loads; the example PyTorchJob's annotations make the
// gang the docs promise.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "api/extender.h"
#include "api/extender_k8s.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;

const std::string kDeploy = std::string(TS_SOURCE_DIR) + "/deploy/kubernetes/";

YAML::Node Load(const std::string& file) { return YAML::LoadFile(kDeploy + file); }

TEST(DeployManifests, SchedulerConfigurationCallsTheExtenderVerbs) {
  const YAML::Node cfg = Load("scheduler-config.yaml");
  EXPECT_EQ(cfg["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(cfg["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  // Gang pods must see their reserved node among the candidates.
  EXPECT_EQ(cfg["percentageOfNodesToScore"].as<int>(), 100);
  EXPECT_EQ(cfg["profiles"][0]["schedulerName"].as<std::string>(), "toposched");
  ASSERT_EQ(cfg["extenders"].size(), 1u);
  const YAML::Node e = cfg["extenders"][0];
  // Every key is a field of kube-scheduler's Extender (config/v1): a typo would be ignored.
  const std::set<std::string> known = {"urlPrefix",        "filterVerb",       "preemptVerb",
                                       "prioritizeVerb",   "weight",           "bindVerb",
                                       "enableHTTPS",      "tlsConfig",        "httpTimeout",
                                       "nodeCacheCapable", "managedResources", "ignorable"};
  for (const auto& kv : e) EXPECT_TRUE(known.count(kv.first.as<std::string>())) << kv.first;
  const std::string url = e["urlPrefix"].as<std::string>();
  EXPECT_EQ(url.substr(url.size() - std::string("/extender").size()), "/extender");
  // HTTPS with a client certificate: the extender listener (no change without a credential).
  EXPECT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  EXPECT_TRUE(e["enableHTTPS"].as<bool>());
  for (const char* k : {"certFile", "keyFile", "caFile"}) {
    EXPECT_EQ(e["tlsConfig"][k].as<std::string>().rfind("/etc/toposched-tls/", 0), 0u) << k;
  }
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  EXPECT_EQ(e["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_GT(e["weight"].as<int>(), 0);
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  ASSERT_EQ(e["managedResources"].size(), 1u);
  EXPECT_EQ(e["managedResources"][0]["name"].as<std::string>(), ExtenderOptions().gpu_resource);
}

TEST(DeployManifests, ConfigMapCarriesTheSameConfigurationAndALoadableClusterSpec) {
  std::ifstream in(kDeploy + "configmap.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  const YAML::Node cm = YAML::Load(ss.str());
  EXPECT_EQ(cm["kind"].as<std::string>(), "ConfigMap");
  const YAML::Node inner = YAML::Load(cm["data"]["scheduler-config.yaml"].as<std::string>());
  EXPECT_EQ(YAML::Dump(inner), YAML::Dump(Load("scheduler-config.yaml")));
  auto cluster = topo::io::ParseClusterYaml(cm["data"]["cluster.yaml"].as<std::string>(),
                                            "configmap.yaml:cluster.yaml", kDeploy);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->nodes.size(), 32u);
  EXPECT_EQ(cluster->TotalGpus(), 256);
}

TEST(DeployManifests, ExamplePyTorchJobMakesASixteenPodGang) {
  const YAML::Node job = Load("example-pytorchjob.yaml");
  const YAML::Node specs = job["spec"]["pytorchReplicaSpecs"];
  int pods = 0;
  for (const char* type : {"Master", "Worker"}) pods += specs[type]["replicas"].as<int>();
  EXPECT_EQ(pods, 16);
  const YAML::Node tmpl = specs["Worker"]["template"];
  EXPECT_EQ(tmpl["spec"]["schedulerName"].as<std::string>(), "toposched");
  // The pod the training operator makes from the worker template.
  k8s::Pod pod;
  pod.name_space = job["metadata"]["namespace"].as<std::string>();
  pod.name = "llama-70b-worker-3";
  pod.labels = {{"training.kubeflow.org/job-name", "llama-70b"},
                {"training.kubeflow.org/replica-type", "worker"},
                {"training.kubeflow.org/replica-index", "3"}};
  for (const auto& kv : tmpl["metadata"]["annotations"]) {
    pod.annotations[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  pod.gpus = tmpl["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>();
  const ExtenderOptions o;
  auto m = k8s::MembershipOf(pod, o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->key, "ml/llama-70b");
  EXPECT_EQ(m->index, 4);  // behind the master
  auto spec = k8s::GangSpec(pod, *m, o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->replicas, 16);
  EXPECT_EQ(spec->gpus_per_replica, 8);
  EXPECT_EQ(spec->layout.tp, 8);
  EXPECT_EQ(spec->layout.dp, 16);
  EXPECT_EQ(spec->constraints.job.mode, job::ConstraintMode::kPreferred);
  EXPECT_EQ(spec->constraints.job.level, "leaf");
}

// The toposched container serves the extender listener where kube-scheduler's urlPrefix points,
// trusting the CA kube-scheduler's client certificate comes from; both mount the same Secret.
TEST(DeployManifests, ExtenderListenerMatchesTheSchedulerConfiguration) {
  const YAML::Node e = Load("scheduler-config.yaml")["extenders"][0];
  const std::string url = e["urlPrefix"].as<std::string>();  // https://127.0.0.1:PORT/extender
  const std::string hostport = url.substr(8, url.find('/', 8) - 8);
  std::set<std::string> args;
  std::set<std::string> secret_mounts;
  std::string secret;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeploy + "deployment.yaml")) {
    if (doc["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node spec = doc["spec"]["template"]["spec"];
    for (const YAML::Node& v : spec["volumes"]) {
      if (v["name"].as<std::string>() == "extender-tls") {
        secret = v["secret"]["secretName"].as<std::string>();
      }
    }
    for (const YAML::Node& c : spec["containers"]) {
      for (const YAML::Node& m : c["volumeMounts"]) {
        if (m["name"].as<std::string>() == "extender-tls") {
          secret_mounts.insert(c["name"].as<std::string>() + ":" +
                               m["mountPath"].as<std::string>());
        }
      }
      if (c["name"].as<std::string>() != "toposched") continue;
      for (const YAML::Node& a : c["args"]) args.insert(a.as<std::string>());
    }
  }
  EXPECT_EQ(secret, "toposched-extender-tls");
  EXPECT_EQ(secret_mounts, (std::set<std::string>{"kube-scheduler:/etc/toposched-tls",
                                                  "toposched:/etc/toposched-tls"}));
  EXPECT_EQ(args.count("--extender-listen=" + hostport), 1u) << hostport;
  EXPECT_EQ(args.count("--extender-client-ca=" + e["tlsConfig"]["caFile"].as<std::string>()), 1u);
  EXPECT_EQ(args.count("--extender-tls-cert=/etc/toposched-tls/server.crt"), 1u);
  EXPECT_EQ(args.count("--extender-tls-key=/etc/toposched-tls/server.key"), 1u);
}

// The node agent's DaemonSet reaches the daemon where it listens, through the Service's port,
// with the agents' token from the Secret the daemon reads it from; it names its node from the
// downward API; every flag it passes is one `toposched agent` has; only its pods may reach the
// API's port.
TEST(DeployManifests, AgentReachesTheDaemonWithTheAgentsToken) {
  const YAML::Node ds = Load("agent.yaml");
  EXPECT_EQ(ds["kind"].as<std::string>(), "DaemonSet");
  const YAML::Node pod = ds["spec"]["template"]["spec"];
  const std::string agent_label =
      ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>();
  const YAML::Node c = pod["containers"][0];
  std::map<std::string, std::string> flags;
  ASSERT_EQ(c["args"][0].as<std::string>(), "agent");
  for (size_t i = 1; i < c["args"].size(); ++i) {
    const std::string a = c["args"][i].as<std::string>();
    const size_t eq = a.find('=');
    ASSERT_NE(eq, std::string::npos) << a;
    flags[a.substr(0, eq)] = a.substr(eq + 1);
  }
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "NODE_NAME");
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "spec.nodeName");
  EXPECT_EQ(pod["volumes"][0]["secret"]["secretName"].as<std::string>(), "toposched-api-tokens");
  EXPECT_EQ(flags["--token-file"],
            c["volumeMounts"][0]["mountPath"].as<std::string>() + "/agent-token");

  // The daemon: listens on the port the Service forwards, reads the agents' token from the same
  // Secret key.
  std::string listen, agent_token_file, token_mount, secret;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeploy + "deployment.yaml")) {
    if (doc["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node spec = doc["spec"]["template"]["spec"];
    for (const YAML::Node& v : spec["volumes"]) {
      if (v["name"].as<std::string>() == "api-tokens") {
        secret = v["secret"]["secretName"].as<std::string>();
      }
    }
    for (const YAML::Node& ct : spec["containers"]) {
      if (ct["name"].as<std::string>() != "toposched") continue;
      for (const YAML::Node& a : ct["args"]) {
        const std::string s = a.as<std::string>();
        if (s.rfind("--listen=", 0) == 0) listen = s.substr(9);
        if (s.rfind("--agent-token-file=", 0) == 0) agent_token_file = s.substr(19);
      }
      for (const YAML::Node& m : ct["volumeMounts"]) {
        if (m["name"].as<std::string>() == "api-tokens")
          token_mount = m["mountPath"].as<std::string>();
      }
    }
  }
  EXPECT_EQ(secret, "toposched-api-tokens");
  EXPECT_EQ(agent_token_file, token_mount + "/agent-token");
  const std::string port = listen.substr(listen.rfind(':') + 1);
  const YAML::Node svc = Load("service.yaml");
  bool served = false;
  for (const YAML::Node& p : svc["spec"]["ports"]) {
    if (std::to_string(p["targetPort"].as<int>()) == port) {
      served = flags["--server"] == "http://" + svc["metadata"]["name"].as<std::string>() + "." +
                                        svc["metadata"]["namespace"].as<std::string>() +
                                        ".svc:" + std::to_string(p["port"].as<int>());
    }
  }
  EXPECT_TRUE(served) << flags["--server"] << " vs listen " << listen;

  const YAML::Node np = Load("networkpolicy.yaml");
  bool allowed = false;
  for (const YAML::Node& rule : np["spec"]["ingress"]) {
    if (!rule["from"]) continue;
    for (const YAML::Node& p : rule["ports"]) {
      if (std::to_string(p["port"].as<int>()) != port) continue;
      allowed = rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
                    .as<std::string>() == agent_label;
    }
  }
  EXPECT_TRUE(allowed);
  const YAML::Node kust = Load("kustomization.yaml");
  std::set<std::string> resources;
  for (const YAML::Node& r : kust["resources"]) resources.insert(r.as<std::string>());
  EXPECT_EQ(resources.count("agent.yaml"), 1u);
  EXPECT_EQ(resources.count("networkpolicy.yaml"), 1u);

#ifdef TS_CLI
  // Every flag is one `toposched agent` takes.
  const std::string help = std::string(TS_CLI) + " agent --help";
  FILE* p = popen(help.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  for (const auto& [flag, value] : flags) EXPECT_THAT(out, HasSubstr(flag)) << flag;
#endif
}

}  // namespace
}  // namespace toposched::api
