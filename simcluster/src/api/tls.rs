//! The cluster's certificate authority and serving certificate, generated at start (rcgen),
//! and the rustls server configuration built from them (ring provider only).

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Errors while creating certificates or the TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot build the TLS server configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A CA and a serving certificate signed by it.
#[derive(Debug, Clone)]
pub struct Certificates {
    /// The CA certificate, PEM; clients trust this (kubeconfig `certificate-authority-data`).
    pub ca_pem: String,
    /// The serving certificate, DER.
    pub serving_der: Vec<u8>,
    /// The serving key, PKCS#8 DER.
    pub serving_key_der: Vec<u8>,
}

impl Certificates {
    /// Generates a fresh CA and a serving certificate for `localhost`, `127.0.0.1` and the
    /// given extra addresses and names.
    pub fn generate(ips: &[IpAddr], names: &[String]) -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "mixcheck-simcluster-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut sans = vec![
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default.svc".to_string(),
        ];
        sans.extend(names.iter().cloned());
        let mut params = CertificateParams::new(sans)?;
        let mut all_ips: Vec<IpAddr> = vec![IpAddr::from([127, 0, 0, 1])];
        all_ips.extend(ips.iter().copied().filter(|ip| !ip.is_unspecified()));
        all_ips.dedup();
        params
            .subject_alt_names
            .extend(all_ips.into_iter().map(SanType::IpAddress));
        params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            serving_der: cert.der().to_vec(),
            serving_key_der: key.serialize_der(),
        })
    }

    /// A rustls server configuration (ring provider, ALPN h2 and http/1.1) that negotiates as
    /// kube-apiserver's Go `crypto/tls` does: TLS 1.3 with AES-128-GCM-SHA256 first whatever the
    /// client prefers (Go orders the suites itself since 1.17 and puts AES-128-GCM first on CPUs
    /// with AES instructions), and session tickets on (Go's `SessionTicketsDisabled` is false
    /// by default), so that a client that keeps its sessions resumes instead of verifying the
    /// certificate again on each new connection — every exec and port-forward is one.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let mut provider = rustls::crypto::ring::default_provider();
        provider
            .cipher_suites
            .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(self.serving_der.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.serving_key_der.clone())),
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.ignore_client_order = true;
        config.ticketer = rustls::crypto::ring::Ticketer::new()?;
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_usable_server_config() {
        let certs = Certificates::generate(&[IpAddr::from([127, 0, 0, 9])], &[]).expect("certs");
        assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let config = certs.server_config().expect("config");
        assert_eq!(config.alpn_protocols.len(), 2);
    }

    /// Moves what `from` has to send into `to`.
    fn send(from: &mut rustls::Connection, to: &mut rustls::Connection) {
        let mut wire = Vec::new();
        while from.wants_write() {
            from.write_tls(&mut wire).expect("write");
        }
        let mut read = &wire[..];
        while !read.is_empty() {
            to.read_tls(&mut read).expect("read");
            to.process_new_packets().expect("process");
        }
    }

    /// As kube-apiserver's Go TLS stack: TLS 1.3 with AES-128-GCM-SHA256 though the client
    /// (rustls, as kube-rs configures it) lists AES-256-GCM-SHA384 first, and a session ticket
    /// that the client's next connection resumes with (no certificate sent or verified again).
    #[test]
    fn a_client_resumes_its_session_with_the_suite_go_picks() {
        use rustls::pki_types::pem::PemObject;
        let certs = Certificates::generate(&[], &[]).expect("certs");
        let server = certs.server_config().expect("config");
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(certs.ca_pem.as_bytes()).expect("pem"))
            .expect("root");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = Arc::new(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_root_certificates(roots)
                .with_no_client_auth(),
        );
        let mut kinds = Vec::new();
        for _ in 0..3 {
            let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
            let mut c =
                rustls::Connection::Client(rustls::ClientConnection::new(client.clone(), name).expect("client"));
            let mut s = rustls::Connection::Server(rustls::ServerConnection::new(server.clone()).expect("server"));
            while c.is_handshaking() || s.is_handshaking() {
                send(&mut c, &mut s);
                send(&mut s, &mut c);
            }
            // The tickets come after the handshake.
            send(&mut s, &mut c);
            assert_eq!(
                c.negotiated_cipher_suite().map(|x| x.suite()),
                Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
            );
            kinds.push(c.handshake_kind());
        }
        assert_eq!(
            kinds,
            [
                Some(rustls::HandshakeKind::Full),
                Some(rustls::HandshakeKind::Resumed),
                Some(rustls::HandshakeKind::Resumed)
            ]
        );
    }
}
