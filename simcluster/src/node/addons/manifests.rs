//! The add-ons' API objects as their upstream manifests write them: kubeadm's CoreDNS (or
//! kube-dns) and kube-proxy, flannel's `kube-flannel.yml` of the version in use,
//! sig-windows-tools' HostProcess DaemonSets for Windows, and the markers of Azure CNI and
//! ovn-kubernetes.

use serde_json::{Value, json};

use super::objects::{apps, config_map, namespace, object, service_account};
use super::{Addons, ClusterDns, Cni, Object, flannel_at_least};
use crate::config::platform::{NetworkMode, VXLAN_PORT};

/// `env` entries from the downward API.
fn field_env(name: &str, path: &str) -> Value {
    json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}})
}

/// The OS label key of the era (`kubernetes.io/os` is GA from 1.14).
fn os_key(a: &Addons) -> &'static str {
    if a.version >= (1, 14) {
        "kubernetes.io/os"
    } else {
        "beta.kubernetes.io/os"
    }
}

/// The registry kubeadm pulls from.
fn k8s_registry(a: &Addons) -> &'static str {
    if a.version >= (1, 25) {
        "registry.k8s.io"
    } else if a.version >= (1, 10) {
        "k8s.gcr.io"
    } else {
        "gcr.io/google_containers"
    }
}

/// The Linux kube-proxy image: the cluster's version.
pub(super) fn kube_proxy_image(a: &Addons) -> String {
    if a.cni == Cni::Eks {
        return format!(
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:{}-minimal-eksbuild.1",
            a.kubernetes_version
        );
    }
    if matches!(a.cni, Cni::Azure | Cni::Aks { .. }) {
        return format!("mcr.microsoft.com/oss/kubernetes/kube-proxy:{}", a.kubernetes_version);
    }
    let name = if a.version >= (1, 12) {
        "kube-proxy"
    } else {
        "kube-proxy-amd64"
    };
    format!("{}/{name}:{}", k8s_registry(a), a.kubernetes_version)
}

/// The Windows kube-proxy image of sig-windows-tools for a kube-proxy version (its flannel
/// and Calico variants).
pub(super) fn windows_kube_proxy_image(a: &Addons, version: &str) -> String {
    let variant = if matches!(a.cni, Cni::Calico { .. }) {
        "calico"
    } else {
        "flannel"
    };
    format!("sigwindowstools/kube-proxy:{version}-{variant}-hostprocess")
}

/// Tolerations of the cluster-critical Deployments (CoreDNS, kube-dns) per era: the control
/// plane's taint was `node-role.kubernetes.io/master` before 1.20 and both until 1.24.
fn control_plane_tolerations(a: &Addons) -> Vec<Value> {
    let mut t = vec![json!({"key": "CriticalAddonsOnly", "operator": "Exists"})];
    if a.version < (1, 25) {
        t.push(json!({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}));
    }
    if a.version >= (1, 20) {
        t.push(json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}));
    }
    t
}

pub(super) fn objects(a: &Addons) -> Vec<Object> {
    let mut out = Vec::new();
    if let Cni::Flannel {
        namespace: "kube-flannel",
        ..
    } = &a.cni
    {
        out.push(namespace(
            "kube-flannel",
            json!({"k8s-app": "flannel", "pod-security.kubernetes.io/enforce": "privileged"}),
        ));
    }
    if a.cni == Cni::OvnKubernetes {
        out.push(namespace("ovn-kubernetes", json!({"name": "ovn-kubernetes"})));
    }
    match &a.dns {
        ClusterDns::CoreDns { image } => coredns(a, image, &mut out),
        ClusterDns::KubeDns => kube_dns(a, &mut out),
    }
    if a.linux_kube_proxy_daemonset() {
        kube_proxy(a, &mut out);
    }
    match &a.cni {
        Cni::Flannel {
            backend,
            version,
            namespace,
        } => {
            flannel(a, backend, version, namespace, &mut out);
            if a.windows_daemonsets() {
                windows_flannel(a, version, namespace, &mut out);
                windows_kube_proxy(a, &mut out);
            }
        }
        Cni::Azure => azure_cni(a, &mut out),
        Cni::Aks { overlay } => super::platforms::aks(a, *overlay, &mut out),
        Cni::Eks => super::platforms::eks(a, &mut out),
        Cni::Gke { dataplane_v2 } => super::platforms::gke(a, *dataplane_v2, &mut out),
        Cni::Calico { version } => {
            super::platforms::calico(a, version, &mut out);
            if a.windows_daemonsets() {
                windows_kube_proxy(a, &mut out);
            }
        }
        Cni::OvnKubernetes => ovn_kubernetes(a, &mut out),
        Cni::HostRoutes => {}
    }
    if a.platform == crate::config::platform::Platform::Kubeadm {
        out.extend(super::kubeadm::kubeadm_config(a));
    }
    out
}

/// kubeadm's Corefile.
const COREFILE: &str = ".:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
";

fn coredns(a: &Addons, image: &str, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(service_account(ns, "coredns"));
    out.push(config_map(
        ns,
        "coredns",
        json!({}),
        json!({"Corefile": COREFILE.replace("CLUSTER_DOMAIN", &a.cluster_domain)}),
    ));
    let labels = json!({"k8s-app": "kube-dns"});
    let deployment = json!({
        "metadata": {"name": "coredns", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [{"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
                            "topologyKey": "kubernetes.io/hostname"
                        }
                    }]}},
                    "tolerations": control_plane_tolerations(a),
                    "nodeSelector": {os_key(a): "linux"},
                    "containers": [{
                        "name": "coredns",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
                        "args": ["-conf", "/etc/coredns/Corefile"],
                        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": true}],
                        "ports": [
                            {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                            {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                            {"containerPort": 9153, "name": "metrics", "protocol": "TCP"}
                        ],
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                            "readOnlyRootFilesystem": true
                        },
                        "livenessProbe": {
                            "httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                            "initialDelaySeconds": 60, "timeoutSeconds": 5, "successThreshold": 1, "failureThreshold": 5
                        },
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"}}
                    }],
                    "dnsPolicy": "Default",
                    "volumes": [{"name": "config-volume", "configMap": {"name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}}]
                }
            }
        }
    });
    out.push(object(apps("deployments"), ns, deployment));
}

/// kube-dns as kubeadm deployed it before CoreDNS (1.5: four containers; 1.9 and 1.10: the
/// `k8s-dns-*` images). dnsmasq answers port 53 and forwards cluster names to kubedns.
fn kube_dns(a: &Addons, out: &mut Vec<Object>) {
    let ns = "kube-system";
    let reg = k8s_registry(a);
    out.push(service_account(ns, "kube-dns"));
    let dns_ports = json!([
        {"containerPort": 53, "name": "dns", "protocol": "UDP"},
        {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"}
    ]);
    let containers = if a.version >= (1, 9) {
        let tag = if a.version >= (1, 10) { "1.14.8" } else { "1.14.7" };
        json!([
            {"name": "kubedns", "image": format!("{reg}/k8s-dns-kube-dns-amd64:{tag}"),
             "args": [format!("--domain={}.", a.cluster_domain), "--dns-port=10053", "--config-dir=/kube-dns-config", "--v=2"],
             "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
             "ports": [{"containerPort": 10053, "name": "dns-local", "protocol": "UDP"},
                       {"containerPort": 10053, "name": "dns-tcp-local", "protocol": "TCP"},
                       {"containerPort": 10055, "name": "metrics", "protocol": "TCP"}]},
            {"name": "dnsmasq", "image": format!("{reg}/k8s-dns-dnsmasq-nanny-amd64:{tag}"),
             "args": ["-v=2", "-logtostderr", "-configDir=/etc/k8s/dns/dnsmasq-nanny", "-restartDnsmasq=true", "--",
                      "-k", "--cache-size=1000", "--no-negcache", "--log-facility=-",
                      format!("--server=/{}/127.0.0.1#10053", a.cluster_domain), "--server=/in-addr.arpa/127.0.0.1#10053",
                      "--server=/ip6.arpa/127.0.0.1#10053"],
             "resources": {"requests": {"cpu": "150m", "memory": "20Mi"}},
             "ports": dns_ports},
            {"name": "sidecar", "image": format!("{reg}/k8s-dns-sidecar-amd64:{tag}"),
             "args": ["--v=2", "--logtostderr",
                      format!("--probe=kubedns,127.0.0.1:10053,kubernetes.default.svc.{},5,SRV", a.cluster_domain),
                      format!("--probe=dnsmasq,127.0.0.1:53,kubernetes.default.svc.{},5,SRV", a.cluster_domain)],
             "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
             "ports": [{"containerPort": 10054, "name": "metrics", "protocol": "TCP"}]}
        ])
    } else {
        json!([
            {"name": "kube-dns", "image": format!("{reg}/kubedns-amd64:1.9"),
             "args": ["--domain=cluster.local", "--dns-port=10053", "--config-map=kube-dns", "--v=2"],
             "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
             "ports": [{"containerPort": 10053, "name": "dns-local", "protocol": "UDP"},
                       {"containerPort": 10053, "name": "dns-tcp-local", "protocol": "TCP"},
                       {"containerPort": 10055, "name": "metrics", "protocol": "TCP"}]},
            {"name": "dnsmasq", "image": format!("{reg}/kube-dnsmasq-amd64:1.4"),
             "args": ["--cache-size=1000", "--no-resolv", "--server=127.0.0.1#10053", "--log-facility=-"],
             "resources": {"requests": {"cpu": "150m", "memory": "10Mi"}},
             "ports": dns_ports},
            {"name": "dnsmasq-metrics", "image": format!("{reg}/dnsmasq-metrics-amd64:1.0"),
             "args": ["--v=2", "--logtostderr"],
             "resources": {"requests": {"memory": "10Mi"}},
             "ports": [{"containerPort": 10054, "name": "metrics", "protocol": "TCP"}]},
            {"name": "healthz", "image": format!("{reg}/exechealthz-amd64:1.2"),
             "args": ["--cmd=nslookup kubernetes.default.svc.cluster.local 127.0.0.1 >/dev/null", "--url=/healthz-dnsmasq", "--port=8080", "--quiet"],
             "resources": {"limits": {"memory": "50Mi"}, "requests": {"cpu": "10m", "memory": "50Mi"}},
             "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
        ])
    };
    let labels = json!({"k8s-app": "kube-dns"});
    let deployment = json!({
        "metadata": {"name": "kube-dns", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "kube-dns",
                    "tolerations": control_plane_tolerations(a),
                    "nodeSelector": {os_key(a): "linux"},
                    "containers": containers,
                    "dnsPolicy": "Default"
                }
            }
        }
    });
    out.push(object(apps("deployments"), ns, deployment));
}

/// kubeadm's `kube-proxy` ConfigMap: the KubeProxyConfiguration and the kubeconfig its pods use.
fn kube_proxy_config(a: &Addons) -> String {
    format!(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
clientConnection:
  acceptContentTypes: \"\"
  burst: 0
  contentType: \"\"
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: {cidr}
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
enableProfiling: false
healthzBindAddress: \"\"
hostnameOverride: \"\"
iptables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: \"\"
  strictARP: false
  syncPeriod: 0s
kind: KubeProxyConfiguration
metricsBindAddress: \"\"
mode: iptables
nodePortAddresses: null
oomScoreAdj: null
portRange: \"\"
winkernel:
  enableDSR: false
  networkName: \"\"
  sourceVip: \"\"
",
        cidr = a.cluster_cidr
    )
}

fn kubeconfig(a: &Addons) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://{}:{}
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
",
        a.api_server.0, a.api_server.1
    )
}

fn kube_proxy(a: &Addons, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(service_account(ns, "kube-proxy"));
    let with_config = a.version >= (1, 9);
    if with_config {
        out.push(config_map(
            ns,
            "kube-proxy",
            json!({"app": "kube-proxy"}),
            json!({"config.conf": kube_proxy_config(a), "kubeconfig.conf": kubeconfig(a)}),
        ));
    }
    let mut command = vec![json!("/usr/local/bin/kube-proxy")];
    let mut env = Vec::new();
    if with_config {
        command.push(json!("--config=/var/lib/kube-proxy/config.conf"));
    } else {
        command.push(json!("--kubeconfig=/run/kubeconfig"));
        command.push(json!(format!("--cluster-cidr={}", a.cluster_cidr)));
    }
    if a.version >= (1, 10) {
        command.push(json!("--hostname-override=$(NODE_NAME)"));
        env.push(field_env("NODE_NAME", "spec.nodeName"));
    }
    let labels = json!({"k8s-app": "kube-proxy"});
    let mut volumes = vec![
        json!({"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}}),
        json!({"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}),
    ];
    let mut mounts = vec![
        json!({"name": "xtables-lock", "mountPath": "/run/xtables.lock"}),
        json!({"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": true}),
    ];
    if with_config {
        volumes.insert(0, json!({"name": "kube-proxy", "configMap": {"name": "kube-proxy"}}));
        mounts.insert(0, json!({"name": "kube-proxy", "mountPath": "/var/lib/kube-proxy"}));
    }
    let ds = json!({
        "metadata": {"name": "kube-proxy", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{
                        "name": "kube-proxy",
                        "image": kube_proxy_image(a),
                        "imagePullPolicy": "IfNotPresent",
                        "command": command,
                        "env": env,
                        "securityContext": {"privileged": true},
                        "volumeMounts": mounts
                    }],
                    "hostNetwork": true,
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "kube-proxy",
                    "nodeSelector": {os_key(a): "linux"},
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"operator": "Exists"}],
                    "volumes": volumes
                }
            }
        }
    });
    out.push(object(apps("daemonsets"), ns, ds));
}

/// `net-conf.json`: the cluster CIDR and the backend (VXLAN with the cluster's VNI,
/// `network.vxlanVni`, and the port Windows needs).
pub(super) fn net_conf(a: &Addons, backend: &str, version: &str) -> String {
    let mut conf = serde_json::Map::new();
    conf.insert("Network".into(), json!(a.cluster_cidr));
    if flannel_at_least(version, (0, 25)) {
        conf.insert("EnableNFTables".into(), json!(false));
    }
    let backend = if backend == "vxlan" {
        json!({"Type": "vxlan", "VNI": a.vxlan_vni, "Port": VXLAN_PORT})
    } else {
        json!({"Type": backend})
    };
    conf.insert("Backend".into(), backend);
    let mut text = serde_json::to_string_pretty(&Value::Object(conf)).unwrap_or_default();
    text.push('\n');
    text
}

/// flannel's images for a version: (flannel, CNI plugin installer) as its manifests name them.
fn flannel_images(version: &str) -> (String, Option<String>) {
    if flannel_at_least(version, (0, 21)) {
        let plugin = if flannel_at_least(version, (0, 25)) {
            "v1.5.1-flannel2"
        } else {
            "v1.1.2"
        };
        (
            format!("docker.io/flannel/flannel:{version}"),
            Some(format!("docker.io/flannel/flannel-cni-plugin:{plugin}")),
        )
    } else if flannel_at_least(version, (0, 15)) {
        (
            format!("docker.io/rancher/mirrored-flannelcni-flannel:{version}"),
            Some("docker.io/rancher/mirrored-flannelcni-flannel-cni-plugin:v1.1.0".to_string()),
        )
    } else if flannel_at_least(version, (0, 13)) {
        (format!("quay.io/coreos/flannel:{version}"), None)
    } else {
        (format!("quay.io/coreos/flannel:{version}-amd64"), None)
    }
}

fn flannel(a: &Addons, backend: &str, version: &str, ns: &str, out: &mut Vec<Object>) {
    out.push(service_account(ns, "flannel"));
    let cni_conf = "{\n  \"name\": \"cbr0\",\n  \"cniVersion\": \"0.3.1\",\n  \"plugins\": [\n    {\n      \"type\": \"flannel\",\n      \"delegate\": {\n        \"hairpinMode\": true,\n        \"isDefaultGateway\": true\n      }\n    },\n    {\n      \"type\": \"portmap\",\n      \"capabilities\": {\n        \"portMappings\": true\n      }\n    }\n  ]\n}\n";
    out.push(config_map(
        ns,
        "kube-flannel-cfg",
        json!({"tier": "node", "k8s-app": "flannel", "app": "flannel"}),
        json!({"cni-conf.json": cni_conf, "net-conf.json": net_conf(a, backend, version)}),
    ));
    let (image, plugin) = flannel_images(version);
    let modern = flannel_at_least(version, (0, 13));
    let mut init = Vec::new();
    if let Some(plugin) = plugin {
        init.push(json!({"name": "install-cni-plugin", "image": plugin, "command": ["cp"],
            "args": ["-f", "/flannel", "/opt/cni/bin/flannel"],
            "volumeMounts": [{"name": "cni-plugin", "mountPath": "/opt/cni/bin"}]}));
    }
    init.push(json!({"name": "install-cni", "image": image, "command": ["cp"],
        "args": ["-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"],
        "volumeMounts": [{"name": "cni", "mountPath": "/etc/cni/net.d"}, {"name": "flannel-cfg", "mountPath": "/etc/kube-flannel/"}]}));
    let (resources, security) = if modern {
        (
            json!({"requests": {"cpu": "100m", "memory": "50Mi"}}),
            json!({"privileged": false, "capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}}),
        )
    } else {
        (
            json!({"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"cpu": "100m", "memory": "50Mi"}}),
            json!({"privileged": true}),
        )
    };
    let labels = json!({"tier": "node", "app": "flannel", "k8s-app": "flannel"});
    let mut spec = json!({
        "hostNetwork": true,
        "priorityClassName": "system-node-critical",
        "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
        "serviceAccountName": "flannel",
        "initContainers": init,
        "containers": [{
            "name": "kube-flannel",
            "image": image,
            "command": ["/opt/bin/flanneld"],
            "args": ["--ip-masq", "--kube-subnet-mgr"],
            "resources": resources,
            "securityContext": security,
            "env": [field_env("POD_NAME", "metadata.name"), field_env("POD_NAMESPACE", "metadata.namespace")],
            "volumeMounts": [{"name": "run", "mountPath": "/run/flannel"}, {"name": "flannel-cfg", "mountPath": "/etc/kube-flannel/"}]
        }],
        "volumes": [
            {"name": "run", "hostPath": {"path": "/run/flannel"}},
            {"name": "cni-plugin", "hostPath": {"path": "/opt/cni/bin"}},
            {"name": "cni", "hostPath": {"path": "/etc/cni/net.d"}},
            {"name": "flannel-cfg", "configMap": {"name": "kube-flannel-cfg"}}
        ]
    });
    if modern {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}});
    } else {
        // The manifest selected amd64 nodes; the Windows guides added the Linux selector.
        spec["nodeSelector"] = json!({"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux"});
    }
    // v0.11 and v0.12 had one DaemonSet per architecture.
    let name = if !modern && flannel_at_least(version, (0, 11)) {
        "kube-flannel-ds-amd64"
    } else {
        "kube-flannel-ds"
    };
    let ds = json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": {"matchLabels": {"app": "flannel"}}, "template": {"metadata": {"labels": labels}, "spec": spec}}
    });
    out.push(object(apps("daemonsets"), ns, ds));
}

/// The HostProcess flannel of sig-windows-tools: its CNI configuration for containerd and the
/// DaemonSet running flanneld on every Windows node.
fn windows_flannel(a: &Addons, version: &str, ns: &str, out: &mut Vec<Object>) {
    let (network, delegate) = match a.mode {
        NetworkMode::Overlay => ("vxlan0", "sdnoverlay"),
        _ => ("cbr0", "sdnbridge"),
    };
    let mut args = vec![
        json!({"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": []}}}),
        json!({"Name": "EndpointPolicy", "Value": {"Type": "SDNROUTE", "Settings": {"DestinationPrefix": "", "NeedEncap": true}}}),
    ];
    if a.mode == NetworkMode::Overlay {
        args.push(json!({"Name": "EndpointPolicy", "Value": {"Type": "ProviderAddress", "Settings": {"ProviderAddress": ""}}}));
    }
    let cni = json!({"name": network, "cniVersion": "0.3.0", "type": "flannel",
        "capabilities": {"portMappings": true, "dns": true},
        "delegate": {"type": delegate, "AdditionalArgs": args}});
    let mut cni_text = serde_json::to_string_pretty(&cni).unwrap_or_default();
    cni_text.push('\n');
    let labels = json!({"tier": "node", "app": "flannel"});
    out.push(config_map(
        ns,
        "kube-flannel-windows-cfg",
        labels.clone(),
        json!({"cni-conf-containerd.json": cni_text}),
    ));
    let ds = json!({
        "metadata": {"name": "kube-flannel-ds-windows-amd64", "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app": "flannel"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                        "matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ]}]}}},
                    "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\system"}},
                    "hostNetwork": true,
                    "serviceAccountName": "flannel",
                    "tolerations": [
                        {"operator": "Exists", "effect": "NoSchedule"},
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"operator": "Exists", "effect": "NoExecute"}
                    ],
                    "containers": [{
                        "name": "kube-flannel",
                        "image": format!("sigwindowstools/flannel:{version}-hostprocess"),
                        "imagePullPolicy": "Always",
                        "volumeMounts": [
                            {"name": "flannel-cfg", "mountPath": "/mounts/kube-flannel/"},
                            {"name": "flannel-windows-cfg", "mountPath": "/mounts/kube-flannel-windows/"}
                        ],
                        "env": [
                            {"name": "CNI_BIN_PATH", "value": "C:\\\\opt\\\\cni\\\\bin"},
                            {"name": "CNI_CONFIG_PATH", "value": "C:\\\\etc\\\\cni\\\\net.d"},
                            {"name": "SERVICE_SUBNET", "value": a.service_cidr},
                            {"name": "KUBERNETES_SERVICE_HOST", "value": a.api_server.0},
                            {"name": "KUBERNETES_SERVICE_PORT", "value": a.api_server.1.to_string()},
                            field_env("POD_NAME", "metadata.name"),
                            field_env("POD_NAMESPACE", "metadata.namespace")
                        ]
                    }],
                    "volumes": [
                        {"name": "flannel-cfg", "configMap": {"name": "kube-flannel-cfg"}},
                        {"name": "flannel-windows-cfg", "configMap": {"name": "kube-flannel-windows-cfg"}}
                    ]
                }
            }
        }
    });
    out.push(object(apps("daemonsets"), ns, ds));
}

/// The Windows kube-proxy's KubeProxyConfiguration: kernelspace, the HNS network, the
/// configured DSR and the feature gates it needs before they went GA (WinDSR, WinOverlay: 1.34).
pub(super) fn windows_kube_proxy_config(a: &Addons) -> String {
    let network = windows_network(a);
    let mut gates = Vec::new();
    if a.version < (1, 34) {
        if a.dsr {
            gates.push("  WinDSR: true");
        }
        if a.mode == NetworkMode::Overlay {
            gates.push("  WinOverlay: true");
        }
    }
    let gates = if gates.is_empty() {
        "featureGates: {}\n".to_string()
    } else {
        format!("featureGates:\n{}\n", gates.join("\n"))
    };
    format!(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
clusterCIDR: {cidr}
{gates}hostnameOverride: \"\"
mode: kernelspace
winkernel:
  enableDSR: {dsr}
  networkName: {network}
  sourceVip: \"\"
",
        cidr = a.cluster_cidr,
        dsr = a.dsr,
    )
}

/// The HNS network the Windows kube-proxy is told to use (`KUBE_NETWORK`).
fn windows_network(a: &Addons) -> &'static str {
    match (&a.cni, a.mode) {
        (Cni::Calico { .. }, _) => "Calico",
        (_, NetworkMode::Overlay) => "vxlan0",
        _ => "cbr0",
    }
}

/// sig-windows-tools' HostProcess kube-proxy, one DaemonSet per kube-proxy version in use.
fn windows_kube_proxy(a: &Addons, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(config_map(
        ns,
        "kube-proxy-windows",
        json!({"app": "kube-proxy"}),
        json!({"config.conf": windows_kube_proxy_config(a)}),
    ));
    let network = windows_network(a);
    let several = a.windows_kube_proxy.len() > 1;
    for (i, (version, nodes)) in a.windows_kube_proxy.iter().enumerate() {
        let name = if i == 0 {
            "kube-proxy-windows".to_string()
        } else {
            format!("kube-proxy-windows-{}", version.replace(['.', '+'], "-"))
        };
        let labels = json!({"k8s-app": name});
        let mut spec = json!({
            "serviceAccountName": "kube-proxy",
            "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\system"}},
            "hostNetwork": true,
            "priorityClassName": "system-node-critical",
            "containers": [{
                "name": "kube-proxy",
                "image": windows_kube_proxy_image(a, version),
                "imagePullPolicy": "IfNotPresent",
                "command": ["%CONTAINER_SANDBOX_MOUNT_POINT%/kube-proxy/kube-proxy.exe"],
                "args": [
                    "--config=%CONTAINER_SANDBOX_MOUNT_POINT%/mounts/var/lib/kube-proxy-windows/config.conf",
                    "--hostname-override=$(NODE_NAME)",
                    "--v=4"
                ],
                "env": [
                    {"name": "KUBE_NETWORK", "value": network},
                    field_env("NODE_NAME", "spec.nodeName"),
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                ],
                "volumeMounts": [
                    {"name": "kube-proxy", "mountPath": "/mounts/var/lib/kube-proxy"},
                    {"name": "kube-proxy-windows", "mountPath": "/mounts/var/lib/kube-proxy-windows"}
                ]
            }],
            "nodeSelector": {"kubernetes.io/os": "windows"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"operator": "Exists"}],
            "volumes": [
                {"name": "kube-proxy", "configMap": {"name": "kube-proxy"}},
                {"name": "kube-proxy-windows", "configMap": {"name": "kube-proxy-windows"}}
            ]
        });
        if several {
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": nodes}]}]}}});
        }
        let ds = json!({
            "metadata": {"name": name, "labels": {"k8s-app": "kube-proxy"}},
            "spec": {
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {"metadata": {"labels": labels}, "spec": spec}
            }
        });
        out.push(object(apps("daemonsets"), ns, ds));
    }
}

/// What an aks-engine-built cluster with Azure CNI showed in kube-system (Azure/AKS#820, before
/// AKS retired it): the network monitor and the IP masquerade agent with its reconciled
/// configuration. AKS itself: [`super::platforms::aks`].
fn azure_cni(a: &Addons, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(config_map(
        ns,
        "azure-ip-masq-agent-config-reconciled",
        json!({"component": "ip-masq-agent", "kubernetes.io/cluster-service": "true", "addonmanager.kubernetes.io/mode": "Reconcile"}),
        json!({"ip-masq-agent-reconciled": format!("nonMasqueradeCIDRs:\n  - {}\nmasqLinkLocal: true\n", a.cluster_cidr)}),
    ));
    let linux = json!({"kubernetes.io/os": "linux"});
    let tolerations = json!([
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"operator": "Exists", "effect": "NoExecute"},
        {"operator": "Exists", "effect": "NoSchedule"}
    ]);
    let monitor = json!({"k8s-app": "azure-cnms"});
    out.push(object(
        apps("daemonsets"),
        ns,
        json!({
            "metadata": {"name": "azure-cni-networkmonitor", "labels": {"addonmanager.kubernetes.io/mode": "Reconcile", "k8s-app": "azure-cnms"}},
            "spec": {"selector": {"matchLabels": monitor}, "template": {"metadata": {"labels": monitor}, "spec": {
                "hostNetwork": true,
                "priorityClassName": "system-node-critical",
                "nodeSelector": linux,
                "tolerations": tolerations,
                "containers": [{"name": "azure-cnms", "image": "mcr.microsoft.com/containernetworking/networkmonitor:v1.1.8",
                    "resources": {"requests": {"cpu": "30m", "memory": "15Mi"}, "limits": {"memory": "300Mi"}},
                    "securityContext": {"privileged": true},
                    "env": [{"name": "HOSTNAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}]}]
            }}}
        }),
    ));
    let masq = json!({"k8s-app": "azure-ip-masq-agent", "tier": "node"});
    out.push(object(
        apps("daemonsets"),
        ns,
        json!({
            "metadata": {"name": "azure-ip-masq-agent", "labels": {"addonmanager.kubernetes.io/mode": "Reconcile", "component": "azure-ip-masq-agent", "k8s-app": "azure-ip-masq-agent", "tier": "node"}},
            "spec": {"selector": {"matchLabels": masq}, "template": {"metadata": {"labels": masq}, "spec": {
                "hostNetwork": true,
                "priorityClassName": "system-node-critical",
                "nodeSelector": linux,
                "tolerations": tolerations,
                "containers": [{"name": "azure-ip-masq-agent", "image": "mcr.microsoft.com/aks/ip-masq-agent-v2:v0.1.15",
                    "args": ["--v=2", "--resync-interval=60"],
                    "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"memory": "250Mi"}},
                    "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}},
                    "volumeMounts": [{"name": "azure-ip-masq-agent-config-volume", "mountPath": "/etc/config"}]}],
                "volumes": [{"name": "azure-ip-masq-agent-config-volume", "projected": {"sources": [
                    {"configMap": {"name": "azure-ip-masq-agent-config-reconciled", "optional": true}}]}}]
            }}}
        }),
    ));
}

/// ovn-kubernetes: its namespace, the cluster configuration and the per-node agent.
fn ovn_kubernetes(a: &Addons, out: &mut Vec<Object>) {
    let ns = "ovn-kubernetes";
    out.push(config_map(
        ns,
        "ovn-config",
        json!({}),
        json!({"net_cidr": a.cluster_cidr, "svc_cidr": a.service_cidr,
            "k8s_apiserver": format!("https://{}:{}", a.api_server.0, a.api_server.1), "mtu": "1400",
            "host_network_namespace": "ovn-host-network"}),
    ));
    out.push(service_account(ns, "ovnkube-node"));
    let labels = json!({"name": "ovnkube-node", "component": "network", "type": "infra", "kubernetes.io/os": "linux"});
    let image = "ghcr.io/ovn-org/ovn-kubernetes/ovn-kube-ubuntu:master";
    let env = json!([
        {"name": "K8S_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "OVN_NET_CIDR", "valueFrom": {"configMapKeyRef": {"name": "ovn-config", "key": "net_cidr"}}},
        {"name": "OVN_SVC_CIDR", "valueFrom": {"configMapKeyRef": {"name": "ovn-config", "key": "svc_cidr"}}}
    ]);
    out.push(object(
        apps("daemonsets"),
        ns,
        json!({
            "metadata": {"name": "ovnkube-node", "labels": {"name": "ovnkube-node"}},
            "spec": {"selector": {"matchLabels": {"name": "ovnkube-node"}}, "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": "ovnkube-node",
                "hostNetwork": true,
                "hostPID": true,
                "priorityClassName": "system-node-critical",
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {"name": "ovnkube-node", "image": image, "command": ["/root/ovnkube.sh", "ovn-node"],
                     "securityContext": {"privileged": true}, "env": env,
                     "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}}},
                    {"name": "ovn-controller", "image": image, "command": ["/root/ovnkube.sh", "ovn-controller"],
                     "securityContext": {"capabilities": {"add": ["SYS_NICE"]}}, "env": env,
                     "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}}}
                ]
            }}}
        }),
    ));
}
