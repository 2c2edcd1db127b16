//! Protobuf request bodies: each served kind sent as protobuf (encoded with its `k8s-pb`
//! type, as kubectl's typed clients send it) and as JSON gives the same stored object.

use k8s_pb::api::{apps, authorization, batch, coordination, core, discovery, node, rbac, scheduling};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, MicroTime, ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use reqwest::header::CONTENT_TYPE;
use rstest::rstest;
use serde_json::{Value, json};

use crate::common;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Metadata as Go's marshaller writes it: unset non-pointer strings as "", a zero time as an
/// empty message.
fn meta(name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(""),
        labels: [("app".to_string(), "x".to_string())].into_iter().collect(),
        creation_timestamp: Some(Time::default()),
        ..Default::default()
    })
}

fn json_meta(name: &str) -> Value {
    json!({"name": name, "labels": {"app": "x"}})
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    [b"k8s\0".to_vec(), unknown.encode_to_vec()].concat()
}

fn pod_spec() -> core::v1::PodSpec {
    core::v1::PodSpec {
        containers: vec![core::v1::Container {
            name: s("c"),
            image: s("busybox:1.36"),
            command: vec!["sleep".into(), "3600".into()],
            image_pull_policy: s(""),
            ports: vec![core::v1::ContainerPort {
                container_port: Some(80),
                ..Default::default()
            }],
            ..Default::default()
        }],
        restart_policy: s("Always"),
        ..Default::default()
    }
}

fn json_pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
        "ports": [{"containerPort": 80}]}], "restartPolicy": "Always"})
}

fn template(restart: &str) -> Option<core::v1::PodTemplateSpec> {
    let mut spec = pod_spec();
    spec.restart_policy = s(restart);
    Some(core::v1::PodTemplateSpec {
        metadata: meta(""),
        spec: Some(spec),
    })
}

fn json_template(restart: &str) -> Value {
    let mut spec = json_pod_spec();
    spec["restartPolicy"] = json!(restart);
    json!({"metadata": {"labels": {"app": "x"}}, "spec": spec})
}

fn selector() -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: [("app".to_string(), "x".to_string())].into_iter().collect(),
        ..Default::default()
    })
}

fn rule() -> rbac::v1::PolicyRule {
    rbac::v1::PolicyRule {
        verbs: vec!["get".into(), "list".into()],
        api_groups: vec!["".into()],
        resources: vec!["pods".into()],
        ..Default::default()
    }
}

fn binding_parts() -> (Vec<rbac::v1::Subject>, Option<rbac::v1::RoleRef>, Value, Value) {
    (
        vec![rbac::v1::Subject {
            kind: s("ServiceAccount"),
            name: s("default"),
            namespace: s("default"),
            api_group: s(""),
        }],
        Some(rbac::v1::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("ClusterRole"),
            name: s("view"),
        }),
        json!([{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]),
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}),
    )
}

/// The protobuf body and the JSON object of one kind, for an object named `name`.
type Sample = fn(&str) -> (Vec<u8>, Value);

fn namespace(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::Namespace {
        metadata: meta(n),
        spec: Some(Default::default()),
        status: Some(Default::default()),
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {}, "status": {}}),
    )
}

fn configmap(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::ConfigMap {
        metadata: meta(n),
        data: [("k".to_string(), "v\n\"quoted\" ünï".to_string())]
            .into_iter()
            .collect(),
        binary_data: [("b".to_string(), vec![0u8, 255, 10])].into_iter().collect(),
        immutable: Some(false),
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "data": {"k": "v\n\"quoted\" ünï"}, "binaryData": {"b": "AP8K"}, "immutable": false}),
    )
}

fn secret(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::Secret {
        metadata: meta(n),
        data: [("k".to_string(), b"hi".to_vec())].into_iter().collect(),
        r#type: s("Opaque"),
        ..Default::default()
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "data": {"k": "aGk="}, "type": "Opaque"}),
    )
}

fn serviceaccount(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::ServiceAccount {
        metadata: meta(n),
        automount_service_account_token: Some(false),
        image_pull_secrets: vec![core::v1::LocalObjectReference { name: s("regcred") }],
        ..Default::default()
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "regcred"}]}),
    )
}

fn service(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::Service {
        metadata: meta(n),
        spec: Some(core::v1::ServiceSpec {
            ports: vec![core::v1::ServicePort {
                name: s("http"),
                port: Some(80),
                protocol: s("TCP"),
                target_port: Some(IntOrString {
                    r#type: Some(1),
                    int_val: Some(0),
                    str_val: s("web"),
                }),
                node_port: Some(0),
                ..Default::default()
            }],
            selector: [("app".to_string(), "x".to_string())].into_iter().collect(),
            r#type: s("ClusterIP"),
            session_affinity: s(""),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP",
            "targetPort": "web", "nodePort": 0}], "selector": {"app": "x"}, "type": "ClusterIP"}, "status": {}}),
    )
}

/// A pod with the Go structs JSON inlines: a Volume's source and the key selectors'
/// LocalObjectReference.
fn pod(n: &str) -> (Vec<u8>, Value) {
    let mut spec = pod_spec();
    spec.volumes = vec![core::v1::Volume {
        name: s("cfg"),
        volume_source: Some(core::v1::VolumeSource {
            config_map: Some(core::v1::ConfigMapVolumeSource {
                local_object_reference: Some(core::v1::LocalObjectReference { name: s("settings") }),
                default_mode: Some(420),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }];
    spec.containers[0].env = vec![core::v1::EnvVar {
        name: s("TOKEN"),
        value: s(""),
        value_from: Some(core::v1::EnvVarSource {
            secret_key_ref: Some(core::v1::SecretKeySelector {
                local_object_reference: Some(core::v1::LocalObjectReference { name: s("creds") }),
                key: s("token"),
                optional: Some(true),
            }),
            ..Default::default()
        }),
    }];
    let m = core::v1::Pod {
        metadata: meta(n),
        spec: Some(spec),
        status: None,
    };
    let mut spec = json_pod_spec();
    spec["volumes"] = json!([{"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}}]);
    spec["containers"][0]["env"] =
        json!([{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token", "optional": true}}}]);
    (m.encode_to_vec(), json!({"metadata": json_meta(n), "spec": spec}))
}

fn deployment(n: &str) -> (Vec<u8>, Value) {
    let m = apps::v1::Deployment {
        metadata: meta(n),
        spec: Some(apps::v1::DeploymentSpec {
            replicas: Some(0),
            selector: selector(),
            template: template("Always"),
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}},
            "template": json_template("Always")}}),
    )
}

fn replicaset(n: &str) -> (Vec<u8>, Value) {
    let m = apps::v1::ReplicaSet {
        metadata: meta(n),
        spec: Some(apps::v1::ReplicaSetSpec {
            replicas: Some(0),
            selector: selector(),
            template: template("Always"),
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}},
            "template": json_template("Always")}}),
    )
}

fn daemonset(n: &str) -> (Vec<u8>, Value) {
    let mut t = template("Always");
    if let Some(spec) = t.as_mut().and_then(|t| t.spec.as_mut()) {
        spec.node_selector = [("kubernetes.io/os".to_string(), "none".to_string())]
            .into_iter()
            .collect();
    }
    let mut jt = json_template("Always");
    jt["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "none"});
    let m = apps::v1::DaemonSet {
        metadata: meta(n),
        spec: Some(apps::v1::DaemonSetSpec {
            selector: selector(),
            template: t,
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": jt}}),
    )
}

fn job(n: &str) -> (Vec<u8>, Value) {
    let m = batch::v1::Job {
        metadata: meta(n),
        spec: Some(batch::v1::JobSpec {
            suspend: Some(true),
            backoff_limit: Some(0),
            template: template("Never"),
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"suspend": true, "backoffLimit": 0, "template": json_template("Never")}}),
    )
}

fn cronjob(n: &str) -> (Vec<u8>, Value) {
    let m = batch::v1::CronJob {
        metadata: meta(n),
        spec: Some(batch::v1::CronJobSpec {
            schedule: s("0 3 * * *"),
            suspend: Some(true),
            job_template: Some(batch::v1::JobTemplateSpec {
                metadata: meta(""),
                spec: Some(batch::v1::JobSpec {
                    template: template("OnFailure"),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"schedule": "0 3 * * *", "suspend": true,
            "jobTemplate": {"metadata": {"labels": {"app": "x"}}, "spec": {"template": json_template("OnFailure")}}}}),
    )
}

fn quota(n: &str) -> (Vec<u8>, Value) {
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    let m = core::v1::ResourceQuota {
        metadata: meta(n),
        spec: Some(core::v1::ResourceQuotaSpec {
            hard: [
                ("pods".to_string(), Quantity { string: s("10") }),
                ("requests.cpu".to_string(), Quantity { string: s("500m") }),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"hard": {"pods": "10", "requests.cpu": "500m"}}}),
    )
}

fn priorityclass(n: &str) -> (Vec<u8>, Value) {
    let m = scheduling::v1::PriorityClass {
        metadata: meta(n),
        value: Some(1000),
        global_default: Some(false),
        description: s("for tests"),
        ..Default::default()
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "value": 1000, "globalDefault": false, "description": "for tests"}),
    )
}

fn endpoints(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::Endpoints {
        metadata: meta(n),
        subsets: vec![core::v1::EndpointSubset {
            addresses: vec![core::v1::EndpointAddress {
                ip: s("10.244.0.9"),
                ..Default::default()
            }],
            ports: vec![core::v1::EndpointPort {
                port: Some(8080),
                protocol: s("TCP"),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "subsets": [{"addresses": [{"ip": "10.244.0.9"}], "ports": [{"port": 8080, "protocol": "TCP"}]}]}),
    )
}

fn endpointslice(n: &str) -> (Vec<u8>, Value) {
    let m = discovery::v1::EndpointSlice {
        metadata: meta(n),
        address_type: s("IPv4"),
        endpoints: vec![discovery::v1::Endpoint {
            addresses: vec!["10.244.0.9".into()],
            conditions: Some(discovery::v1::EndpointConditions {
                ready: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ports: vec![],
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.0.9"], "conditions": {"ready": true}}]}),
    )
}

fn lease(n: &str) -> (Vec<u8>, Value) {
    let m = coordination::v1::Lease {
        metadata: meta(n),
        spec: Some(coordination::v1::LeaseSpec {
            holder_identity: s("me"),
            lease_duration_seconds: Some(40),
            renew_time: Some(MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_000),
            }),
            ..Default::default()
        }),
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"holderIdentity": "me", "leaseDurationSeconds": 40,
            "renewTime": "2023-11-14T22:13:20.123456Z"}}),
    )
}

fn event(n: &str) -> (Vec<u8>, Value) {
    let m = core::v1::Event {
        metadata: meta(n),
        involved_object: Some(core::v1::ObjectReference {
            kind: s("Pod"),
            name: s("p"),
            namespace: s("default"),
            ..Default::default()
        }),
        reason: s("Tested"),
        message: s("a message"),
        first_timestamp: Some(Time {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        count: Some(1),
        r#type: s("Normal"),
        ..Default::default()
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Tested", "message": "a message", "firstTimestamp": "2023-11-14T22:13:20Z", "count": 1, "type": "Normal"}),
    )
}

fn runtimeclass(n: &str) -> (Vec<u8>, Value) {
    let m = node::v1::RuntimeClass {
        metadata: meta(n),
        handler: s("runhcs-wcow-process"),
        ..Default::default()
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "handler": "runhcs-wcow-process"}),
    )
}

fn role(n: &str) -> (Vec<u8>, Value) {
    let m = rbac::v1::Role {
        metadata: meta(n),
        rules: vec![rule()],
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
    )
}

fn clusterrole(n: &str) -> (Vec<u8>, Value) {
    let m = rbac::v1::ClusterRole {
        metadata: meta(n),
        rules: vec![rule()],
        aggregation_rule: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
    )
}

fn rolebinding(n: &str) -> (Vec<u8>, Value) {
    let (subjects, role_ref, js, jr) = binding_parts();
    let m = rbac::v1::RoleBinding {
        metadata: meta(n),
        subjects,
        role_ref,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "subjects": js, "roleRef": jr}),
    )
}

fn clusterrolebinding(n: &str) -> (Vec<u8>, Value) {
    let (subjects, role_ref, js, jr) = binding_parts();
    let m = rbac::v1::ClusterRoleBinding {
        metadata: meta(n),
        subjects,
        role_ref,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "subjects": js, "roleRef": jr}),
    )
}

fn access_review(n: &str) -> (Vec<u8>, Value) {
    let m = authorization::v1::SelfSubjectAccessReview {
        metadata: meta(n),
        spec: Some(authorization::v1::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(authorization::v1::ResourceAttributes {
                namespace: s("default"),
                verb: s("list"),
                resource: s("pods"),
                group: s(""),
                ..Default::default()
            }),
            non_resource_attributes: None,
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}}}),
    )
}

fn rules_review(n: &str) -> (Vec<u8>, Value) {
    let m = authorization::v1::SelfSubjectRulesReview {
        metadata: meta(n),
        spec: Some(authorization::v1::SelfSubjectRulesReviewSpec {
            namespace: s("default"),
        }),
        status: None,
    };
    (
        m.encode_to_vec(),
        json!({"metadata": json_meta(n), "spec": {"namespace": "default"}}),
    )
}

/// The stored object without what differs between two creations (name, uid, times, allocations).
fn comparable(v: Value, name: &str) -> Value {
    let uid = v["metadata"]["uid"].as_str().unwrap_or("no uid").to_string();
    let text = v.to_string().replace(&uid, "UID").replace(name, "NAME");
    let mut v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "name",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(k);
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        for k in ["clusterIP", "clusterIPs"] {
            spec.remove(k);
        }
    }
    if let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("startTime");
    }
    v
}

#[rstest]
#[case::namespace("v1", "Namespace", "/api/v1/namespaces", namespace as Sample)]
#[case::configmap("v1", "ConfigMap", "/api/v1/namespaces/default/configmaps", configmap as Sample)]
#[case::secret("v1", "Secret", "/api/v1/namespaces/default/secrets", secret as Sample)]
#[case::serviceaccount("v1", "ServiceAccount", "/api/v1/namespaces/default/serviceaccounts", serviceaccount as Sample)]
#[case::service("v1", "Service", "/api/v1/namespaces/default/services", service as Sample)]
#[case::pod("v1", "Pod", "/api/v1/namespaces/default/pods", pod as Sample)]
#[case::endpoints("v1", "Endpoints", "/api/v1/namespaces/default/endpoints", endpoints as Sample)]
#[case::event("v1", "Event", "/api/v1/namespaces/default/events", event as Sample)]
#[case::endpointslice("discovery.k8s.io/v1", "EndpointSlice", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", endpointslice as Sample)]
#[case::lease("coordination.k8s.io/v1", "Lease", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease as Sample)]
#[case::deployment("apps/v1", "Deployment", "/apis/apps/v1/namespaces/default/deployments", deployment as Sample)]
#[case::replicaset("apps/v1", "ReplicaSet", "/apis/apps/v1/namespaces/default/replicasets", replicaset as Sample)]
#[case::daemonset("apps/v1", "DaemonSet", "/apis/apps/v1/namespaces/default/daemonsets", daemonset as Sample)]
#[case::job("batch/v1", "Job", "/apis/batch/v1/namespaces/default/jobs", job as Sample)]
#[case::cronjob("batch/v1", "CronJob", "/apis/batch/v1/namespaces/default/cronjobs", cronjob as Sample)]
#[case::quota("v1", "ResourceQuota", "/api/v1/namespaces/default/resourcequotas", quota as Sample)]
#[case::priorityclass("scheduling.k8s.io/v1", "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", priorityclass as Sample)]
#[case::runtimeclass("node.k8s.io/v1", "RuntimeClass", "/apis/node.k8s.io/v1/runtimeclasses", runtimeclass as Sample)]
#[case::role("rbac.authorization.k8s.io/v1", "Role", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role as Sample)]
#[case::clusterrole("rbac.authorization.k8s.io/v1", "ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles", clusterrole as Sample)]
#[case::rolebinding("rbac.authorization.k8s.io/v1", "RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rolebinding as Sample)]
#[case::clusterrolebinding("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", clusterrolebinding as Sample)]
#[case::access_review("authorization.k8s.io/v1", "SelfSubjectAccessReview", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", access_review as Sample)]
#[case::rules_review("authorization.k8s.io/v1", "SelfSubjectRulesReview", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", rules_review as Sample)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_and_json_store_the_same_object(
    #[case] api_version: &str,
    #[case] kind: &str,
    #[case] collection: &str,
    #[case] sample: Sample,
) {
    let cluster = common::start().await;
    let client = common::http_client(&cluster);
    let post = |content_type: &'static str, body: Vec<u8>| {
        client
            .post(format!("{}{collection}", cluster.url()))
            .bearer_auth(cluster.token())
            .header(CONTENT_TYPE, content_type)
            .body(body)
            .send()
    };
    let (raw, _) = sample("from-pb");
    let pb = post("application/vnd.kubernetes.protobuf", envelope(api_version, kind, raw))
        .await
        .expect("protobuf POST");
    // The protobuf body is checked for fields its kind does not have, as a JSON one is.
    let pb_warnings: Vec<String> = pb
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|w| w.to_str().ok().map(str::to_string))
        .collect();
    let (pb_code, pb_obj) = (pb.status().as_u16(), pb.json::<Value>().await.expect("JSON reply"));
    assert!(pb_warnings.is_empty(), "{pb_warnings:?}");
    let (_, mut js) = sample("from-json");
    js["apiVersion"] = json!(api_version);
    js["kind"] = json!(kind);
    let js_reply = post("application/json", js.to_string().into_bytes())
        .await
        .expect("JSON POST");
    let (js_code, js_obj) = (
        js_reply.status().as_u16(),
        js_reply.json::<Value>().await.expect("JSON reply"),
    );
    assert_eq!((pb_code, js_code), (201, 201), "protobuf: {pb_obj}\nJSON: {js_obj}");
    assert_eq!(comparable(pb_obj, "from-pb"), comparable(js_obj, "from-json"));
}
