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

    /// A rustls server configuration (ring provider, ALPN h2 and http/1.1).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(self.serving_der.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.serving_key_der.clone())),
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
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
}
