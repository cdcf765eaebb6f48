# syntax=docker/dockerfile:1
# infermeter in a small image: built from source in the Rust image, run from Debian slim
# (glibc, so GPU telemetry can load NVML when the container is given a GPU; a shell, so CI
# systems that run scripts inside the image work).
#
#   docker build -t infermeter .
#   docker run --rm -v "$PWD:/work" infermeter run scenarios/ci-gate.kdl --out results/ci
#
# The entrypoint is the binary; GitLab CI needs `entrypoint: [""]` (see docs/ci.md).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the registry and the build between image builds (BuildKit).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && cp target/release/infermeter /usr/local/bin/infermeter

FROM debian:bookworm-slim
# ca-certificates for https targets; the distribution's current version, like the base image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 infermeter
COPY --from=build /usr/local/bin/infermeter /usr/local/bin/infermeter
USER 10001
WORKDIR /work
ENTRYPOINT ["infermeter"]
CMD ["--help"]
