# syntax=docker/dockerfile:1
# Spillway's container image: built in a Rust image, run from a distroless
# one (glibc and libgcc only: no shell, no package manager) as a non-root user.
#
#   docker build -t spillway .
#   docker run -p 8080:8080 -e SPILLWAY_REDIS_URL=... -e GROQ_API_KEY=... spillway
#
# The config is /etc/spillway/spillway.yaml (deploy/spillway.yaml; mount your
# own over it), data lives on the /var/lib/spillway volume, and the health
# check is the binary itself (`spillway healthcheck`: /readyz must answer 200).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The target and registry caches outlive the build; the binary is copied out
# of them. The data directory is made here: the runtime image has no shell.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p spillway --bin spillway \
    && install -D -m 0755 target/release/spillway /out/bin/spillway \
    && install -d -m 0750 -o 65532 -g 65532 /out/data

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/bin/spillway /usr/local/bin/spillway
COPY --from=build --chown=65532:65532 /out/data /var/lib/spillway
COPY deploy/spillway.yaml /etc/spillway/spillway.yaml
ENV SPILLWAY_CONFIG=/etc/spillway/spillway.yaml \
    SPILLWAY_LOG_FORMAT=json
USER 65532:65532
VOLUME ["/var/lib/spillway"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 \
    CMD ["/usr/local/bin/spillway", "healthcheck", "--url", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/usr/local/bin/spillway"]
CMD ["serve"]
