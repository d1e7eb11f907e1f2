# The oxwright worker (and every other command) with Debian's Chromium.
# Build from the repository root:
#   docker build -f infra/docker/worker.Dockerfile -t oxwright .
# Run it read-only, with /tmp the one writable place (Chromium profiles,
# the sitemap cache, artefacts of an embedded run if --out points there):
#   docker run --read-only --tmpfs /tmp:rw,exec,size=2g --shm-size=1g \
#     -e OXWRIGHT_AMQP_URL=amqp://… -e OXWRIGHT_S3=s3://bucket/prefix oxwright worker
FROM rust:1.95-bookworm AS build
# What `oxwright --version` names as its commit (the context has no .git):
#   --build-arg OXWRIGHT_COMMIT=$(git rev-parse --short HEAD)
ARG OXWRIGHT_COMMIT=unknown
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p oxwright \
 && strip target/release/oxwright

FROM debian:bookworm-slim
# Chromium and fonts follow Debian's security updates: pinning their
# versions would hold back those fixes (hadolint DL3008 is ignored for it).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-dejavu-core tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /tmp --shell /usr/sbin/nologin oxwright
COPY --from=build /src/target/release/oxwright /usr/local/bin/oxwright
# Everything that writes goes to /tmp: the root file system can be read-only.
ENV CHROME_PATH=/usr/bin/chromium HOME=/tmp TMPDIR=/tmp XDG_CONFIG_HOME=/tmp/.config OXWRIGHT_OUT=/tmp/oxwright-out
USER 10001
# tini is PID 1: it forwards SIGTERM (a worker drains on it) and reaps
# Chromium's children.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/oxwright"]
CMD ["worker"]
