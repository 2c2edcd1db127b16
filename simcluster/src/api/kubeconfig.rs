//! The kubeconfig a bundled cluster hands to kubectl and kube-rs: server URL, the CA that
//! signed the serving certificate, and the bearer token. Written with mode 0600.

use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;

/// The context name in the kubeconfigs the bundled cluster writes.
pub const CONTEXT: &str = "mixcheck-sim";

/// Renders a kubeconfig for `server` trusting `ca_pem` and authenticating with `token`.
pub fn render(server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {CONTEXT}-admin
  user:
    token: {token}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {CONTEXT}-admin
    namespace: default
current-context: {CONTEXT}
preferences: {{}}
"
    )
}

/// Writes `contents` to `path` readable by the owner only (0600 on Unix). The file is written
/// beside the target and renamed into place, so a reader never sees half a kubeconfig.
pub fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubeconfig".into());
    let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_ca_token_and_context() {
        let text = render("https://127.0.0.1:6443", "PEM", "tok");
        assert!(text.contains("server: https://127.0.0.1:6443"));
        assert!(text.contains("certificate-authority-data: UEVN"));
        assert!(text.contains("token: tok"));
        assert!(!text.contains("insecure-skip-tls-verify"));
    }

    #[cfg(unix)]
    #[test]
    fn written_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/kubeconfig");
        write(&path, "x").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        write(&path, "y").expect("overwrite");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "y");
    }
}
