//! `kubectl attach`: the WebSocket attach subresource follows a running container until it
//! ends; a completed pod is refused the way kubectl refuses it.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_attach_follows_a_container_to_its_end() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    run_pod(
        &k,
        "default",
        "brief",
        "busybox:1.36",
        Some("linux-1"),
        &["sh", "-c", "echo started; sleep 3"],
    );
    wait_ready(&k, "default", "pod/brief");
    let started = Instant::now();
    let attached = k.run(&["attach", "brief"]);
    assert_eq!(attached.code, Some(0), "{attached:#?}");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "attach returned at once: {attached:#?}"
    );
    // The output before attaching is in the log, not in the attach stream.
    assert!(!attached.stdout.contains("started"), "{attached:#?}");
    assert_eq!(k.jsonpath("default", "pod/brief", "{.status.phase}"), "Succeeded");
    assert_eq!(k.run(&["logs", "brief"]).ok(), "started\n");
    let err = k.run(&["attach", "brief"]).fails();
    assert!(
        err.contains("cannot attach a container in a completed pod; current phase is Succeeded"),
        "{err}"
    );
}
