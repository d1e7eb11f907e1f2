# The worker and scheduler Lambda functions as one container image (the
# binaries speak the Lambda Runtime API themselves, so no runtime interface
# client is needed). Build from the repository root:
#   docker build -f infra/docker/lambda.Dockerfile -t oxwright-lambda .
# The worker function uses the default command; the scheduler function
# sets its image config's command to /usr/local/bin/oxwright-scheduler-lambda.
# Lambda mounts the root read-only and gives /tmp (512 MB to 10 GB).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# Two builds: the scheduler function without the worker feature links no
# Chromium driver (one build of both would give it the worker's).
RUN cargo build --release --locked -p oxwright-lambda --bin oxwright-lambda \
 && cargo build --release --locked -p oxwright-lambda --no-default-features --features lambda \
      --bin oxwright-scheduler-lambda \
 && strip target/release/oxwright-lambda target/release/oxwright-scheduler-lambda

FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /tmp --shell /usr/sbin/nologin oxwright
COPY --from=build /src/target/release/oxwright-lambda /usr/local/bin/oxwright-lambda
COPY --from=build /src/target/release/oxwright-scheduler-lambda /usr/local/bin/oxwright-scheduler-lambda
# Lambda refuses the user namespaces Chromium's sandbox needs: without it, by choice.
ENV CHROME_PATH=/usr/bin/chromium HOME=/tmp TMPDIR=/tmp XDG_CONFIG_HOME=/tmp/.config OXWRIGHT_BROWSER__SANDBOX=off
USER 10001
ENTRYPOINT ["/usr/local/bin/oxwright-lambda"]
