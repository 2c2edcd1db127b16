# syntax=docker/dockerfile:1
# mixcheck in a container, for a pipeline step or an in-cluster Job (deploy/job.yaml):
#   docker build -t mixcheck .
#   docker run --rm -v "$PWD:/work" -w /work mixcheck run --kubeconfig kubeconfig.yaml
# The image has no shell: arguments go to mixcheck as they are.

# The binary is built with the dist profile (Cargo.toml): release, stripped, no debug information.
# The builder is Debian 12 like the runtime image, so the binary finds the glibc it was linked
# against. RUST_VERSION is the workspace's rust-version (Cargo.toml) or a newer stable.
ARG RUST_VERSION=1.89

FROM rust:${RUST_VERSION}-slim-bookworm AS builder
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --profile dist --locked -p mixcheck \
    && install -D -m 0755 target/dist/mixcheck /out/mixcheck

# glibc, libgcc and CA certificates, no shell, no package manager; user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="mixcheck" \
      org.opencontainers.image.description="Conformance and diagnostic harness for Kubernetes clusters that mix Linux and Windows nodes" \
      org.opencontainers.image.source="https://github.com/mixcheck/mixcheck" \
      org.opencontainers.image.url="https://github.com/mixcheck/mixcheck" \
      org.opencontainers.image.documentation="https://github.com/mixcheck/mixcheck#readme" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=builder /out/mixcheck /usr/local/bin/mixcheck
# Numeric, so that Kubernetes can verify runAsNonRoot.
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["mixcheck"]
CMD ["--help"]
