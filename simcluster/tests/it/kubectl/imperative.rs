//! Imperative kubectl, as on a real cluster: `create <kind>`, `run`, `expose`, `set image`,
//! `rollout restart|history|undo`, `label`, `annotate`, `patch` (json, merge, strategic) and
//! `delete --cascade=foreground`, each result read back through a second `kubectl get`.
//! kubectl sends these built-in kinds as protobuf.

use super::*;

use simcluster::{ClusterConfig, Topology};

/// `kubectl get OBJECT -o jsonpath=PATH` in the default namespace.
fn got(k: &Kubectl, object: &str, path: &str) -> String {
    k.jsonpath("default", object, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_creates_each_kind_imperatively() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    // A minute of the CronJob's schedule passes in 3 s.
    topology.timing.scale = 0.05;
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    let k = Kubectl::new(&cluster);
    let creates: &[(&[&str], &str)] = &[
        (
            &[
                "create",
                "deployment",
                "d1",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=80",
            ],
            "deployment.apps/d1 created",
        ),
        (
            &[
                "create",
                "job",
                "j1",
                "--image=busybox:1.36",
                "--",
                "sh",
                "-c",
                "echo hi",
            ],
            "job.batch/j1 created",
        ),
        (
            &[
                "create",
                "cronjob",
                "cj1",
                "--image=busybox:1.36",
                "--schedule=*/1 * * * *",
                "--",
                "echo",
                "hi",
            ],
            "cronjob.batch/cj1 created",
        ),
        (
            &["create", "configmap", "cm1", "--from-literal=a=b"],
            "configmap/cm1 created",
        ),
        (
            &["create", "secret", "generic", "s1", "--from-literal=a=b"],
            "secret/s1 created",
        ),
        (
            &["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
            "service/svc1 created",
        ),
        (&["create", "namespace", "ns1"], "namespace/ns1 created"),
        (&["create", "serviceaccount", "sa1"], "serviceaccount/sa1 created"),
        (
            &["create", "role", "r1", "--verb=get", "--resource=pods"],
            "role.rbac.authorization.k8s.io/r1 created",
        ),
        (
            &[
                "create",
                "rolebinding",
                "rb1",
                "--role=r1",
                "--serviceaccount=default:sa1",
            ],
            "rolebinding.rbac.authorization.k8s.io/rb1 created",
        ),
        (&["create", "quota", "q1", "--hard=pods=10"], "resourcequota/q1 created"),
        (
            &["create", "priorityclass", "pc1", "--value=1000"],
            "priorityclass.scheduling.k8s.io/pc1 created",
        ),
    ];
    for (args, printed) in creates {
        assert_eq!(k.run(args).ok().trim(), *printed);
    }
    let image = "{.spec.template.spec.containers[0].image}";
    assert_eq!(
        got(
            &k,
            "deployment/d1",
            &format!("{{.spec.replicas}} {image} {{.spec.template.spec.containers[0].ports[0].containerPort}}")
        ),
        "2 nginx:1.27 80"
    );
    assert_eq!(
        got(
            &k,
            "job/j1",
            &format!("{image} {{.spec.template.spec.restartPolicy}} {{.spec.template.spec.containers[0].command}}")
        ),
        r#"busybox:1.36 Never ["sh","-c","echo hi"]"#
    );
    assert_eq!(
        got(
            &k,
            "cronjob/cj1",
            "{.spec.schedule} {.spec.concurrencyPolicy} {.spec.jobTemplate.spec.template.spec.containers[0].image}"
        ),
        "*/1 * * * * Allow busybox:1.36"
    );
    assert_eq!(got(&k, "configmap/cm1", "{.data.a}"), "b");
    assert_eq!(got(&k, "secret/s1", "{.type} {.data.a}"), "Opaque Yg==");
    assert_eq!(
        got(
            &k,
            "service/svc1",
            "{.spec.type} {.spec.ports[0].port} {.spec.ports[0].targetPort}"
        ),
        "ClusterIP 80 8080"
    );
    assert_eq!(
        k.run(&["get", "namespace", "ns1", "-o", "jsonpath={.status.phase}"])
            .ok(),
        "Active"
    );
    assert_eq!(got(&k, "serviceaccount/sa1", "{.metadata.name}"), "sa1");
    assert_eq!(
        got(&k, "role/r1", "{.rules[0].verbs} {.rules[0].resources}"),
        r#"["get"] ["pods"]"#
    );
    assert_eq!(
        got(
            &k,
            "rolebinding/rb1",
            "{.roleRef.kind}/{.roleRef.name} {.subjects[0].name}"
        ),
        "Role/r1 sa1"
    );
    assert_eq!(
        got(&k, "resourcequota/q1", "{.spec.hard.pods} {.status.hard.pods}"),
        "10 10"
    );
    assert_eq!(
        k.run(&["get", "priorityclass", "pc1", "-o", "jsonpath={.value}"]).ok(),
        "1000"
    );
    // The CronJob's controller creates a Job on schedule, named after the scheduled minute.
    eventually("cj1 creates a job", || {
        got(&k, "jobs", "{.items[*].metadata.ownerReferences[0].name}").contains("cj1")
    });
    let jobs = got(
        &k,
        "jobs",
        "{range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].kind}{\"\\n\"}{end}",
    );
    let (job, _) = jobs
        .lines()
        .find(|l| l.ends_with(" CronJob"))
        .and_then(|l| l.split_once(' '))
        .expect("a job owned by the CronJob");
    let minute = job.strip_prefix("cj1-").and_then(|m| m.parse::<i64>().ok());
    assert!(minute.is_some_and(|m| m > 29_000_000), "{job}");
    eventually("cj1 records its schedule", || {
        !got(&k, "cronjob/cj1", "{.status.lastScheduleTime}").is_empty()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_run_expose_set_rollout_label_annotate_patch_delete() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    assert_eq!(
        k.run(&["run", "p1", "--image=busybox:1.36", "--", "sleep", "3600"])
            .ok()
            .trim(),
        "pod/p1 created"
    );
    assert_eq!(
        got(&k, "pod/p1", "{.spec.containers[0].image} {.metadata.labels.run}"),
        "busybox:1.36 p1"
    );
    assert_eq!(k.run(&["label", "pod", "p1", "tier=web"]).ok().trim(), "pod/p1 labeled");
    assert_eq!(
        k.run(&["annotate", "pod", "p1", "note=hello"]).ok().trim(),
        "pod/p1 annotated"
    );
    assert_eq!(
        got(&k, "pod/p1", "{.metadata.labels.tier} {.metadata.annotations.note}"),
        "web hello"
    );

    k.run(&["create", "deployment", "d1", "--image=nginx:1.27", "--port=80"])
        .ok();
    let revisions = |k: &Kubectl| {
        got(
            k,
            "rs",
            "{range .items[*]}{.metadata.annotations.deployment\\.kubernetes\\.io/revision}{\" \"}{end}",
        )
    };
    eventually("d1's first ReplicaSet", || revisions(&k).trim() == "1");
    assert_eq!(
        k.run(&["expose", "deployment", "d1", "--port=8080", "--target-port=80"])
            .ok()
            .trim(),
        "service/d1 exposed"
    );
    assert_eq!(
        got(
            &k,
            "service/d1",
            "{.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector.app}"
        ),
        "8080 80 d1"
    );

    let image = "{.spec.template.spec.containers[0].image}";
    assert_eq!(
        k.run(&["set", "image", "deployment/d1", "nginx=nginx:1.28"])
            .ok()
            .trim(),
        "deployment.apps/d1 image updated"
    );
    assert_eq!(got(&k, "deployment/d1", image), "nginx:1.28");
    eventually("the second revision", || {
        got(
            &k,
            "deployment/d1",
            "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
        ) == "2"
    });
    assert_eq!(
        k.run(&["rollout", "restart", "deployment/d1"]).ok().trim(),
        "deployment.apps/d1 restarted"
    );
    assert!(
        !got(
            &k,
            "deployment/d1",
            "{.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}"
        )
        .is_empty()
    );
    eventually("the third revision", || {
        got(
            &k,
            "deployment/d1",
            "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
        ) == "3"
    });
    let history = k.run(&["rollout", "history", "deployment/d1"]).ok();
    let listed: Vec<&str> = history
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, ["1", "2", "3"], "{history}");
    assert_eq!(
        k.run(&["rollout", "undo", "deployment/d1"]).ok().trim(),
        "deployment.apps/d1 rolled back"
    );
    // Back to revision 2: the new image, without the restart annotation; its ReplicaSet is reused.
    assert_eq!(
        got(
            &k,
            "deployment/d1",
            &format!("{image} {{.spec.template.metadata.annotations}}")
        ),
        "nginx:1.28 "
    );
    eventually("revision 2 becomes 4", || {
        got(
            &k,
            "deployment/d1",
            "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
        ) == "4"
    });
    let mut now = revisions(&k).split_whitespace().map(str::to_string).collect::<Vec<_>>();
    now.sort();
    assert_eq!(now, ["1", "3", "4"]);

    k.run(&[
        "patch",
        "deployment",
        "d1",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ])
    .ok();
    assert_eq!(got(&k, "deployment/d1", "{.spec.replicas}"), "3");
    k.run(&[
        "patch",
        "deployment",
        "d1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":1}]"#,
    ])
    .ok();
    assert_eq!(got(&k, "deployment/d1", "{.spec.replicas}"), "1");
    k.run(&[
        "patch",
        "deployment",
        "d1",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.29"}]}}}}"#,
    ])
    .ok();
    assert_eq!(
        got(
            &k,
            "deployment/d1",
            &format!("{image} {{.spec.template.spec.containers[0].ports[0].containerPort}}")
        ),
        "nginx:1.29 80"
    );

    assert_eq!(
        k.run(&["delete", "deployment", "d1", "--cascade=foreground"])
            .ok()
            .trim(),
        "deployment.apps \"d1\" deleted"
    );
    let err = k.run(&["get", "deployment", "d1"]).fails();
    assert!(err.contains("NotFound"), "{err}");
    assert_eq!(k.run(&["get", "rs", "-l", "app=d1", "-o", "name"]).ok().trim(), "");
}
