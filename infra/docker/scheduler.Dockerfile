# The oxwright scheduler daemon (manifests, HTTP API, cron schedules,
# webhooks): the `oxwright` binary built without its `browser` feature, so
# it links no Chromium driver and needs a broker (it runs no jobs itself).
# Build from the repository root:
#   docker build -f infra/docker/scheduler.Dockerfile -t oxwright-scheduler .
#   docker run --read-only --tmpfs /tmp -p 8080:8080 \
#     -e OXWRIGHT_AMQP_URL=amqp://… -e OXWRIGHT_S3=s3://bucket/prefix oxwright-scheduler
FROM rust:1.95-bookworm AS build
# What `oxwright --version` names as its commit (the context has no .git):
#   --build-arg OXWRIGHT_COMMIT=$(git rev-parse --short HEAD)
ARG OXWRIGHT_COMMIT=unknown
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p oxwright --no-default-features \
 && strip target/release/oxwright

FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /tmp --shell /usr/sbin/nologin oxwright
COPY --from=build /src/target/release/oxwright /usr/local/bin/oxwright
ENV HOME=/tmp TMPDIR=/tmp XDG_CONFIG_HOME=/tmp/.config
USER 10001
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/oxwright"]
CMD ["scheduler", "--listen", "0.0.0.0:8080"]
