//! Image references as runtimes read them.

/// An image reference's repository (lower case, without tag or digest) and its last path
/// segment: `Registry.k8s.io/e2e-test-images/agnhost:2.52` → (`registry.k8s.io/e2e-test-images/agnhost`, `agnhost`).
pub fn repository(image: &str) -> (String, String) {
    let lower = image.to_ascii_lowercase();
    let reference = lower.split('@').next().unwrap_or("");
    let repo = match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => reference,
    };
    let name = repo.rsplit('/').next().unwrap_or(repo).to_string();
    (repo.to_string(), name)
}
