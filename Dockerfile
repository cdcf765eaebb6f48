# The infermeter image the Kubernetes manifests of a distributed run use
# (`infermeter k8s … --image IMAGE`; docs/distributed.md). Build from the repository root:
#   docker build -t REGISTRY/infermeter:TAG .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin infermeter

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/infermeter /usr/local/bin/infermeter
# Results go to /results in the Job; run unprivileged.
RUN useradd --uid 10001 --create-home infermeter && mkdir /results && chown infermeter /results
USER infermeter
ENTRYPOINT ["infermeter"]
