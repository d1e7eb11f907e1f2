# The oxwright binary with Debian's Chromium, for users who have Docker.
# Build from the repository root:
#   docker build -f infra/docker/worker.Dockerfile -t oxwright .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p oxwright

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-dejavu-core tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/oxwright /usr/local/bin/oxwright
ENV CHROME_PATH=/usr/bin/chromium
# tini reaps Chromium's children when oxwright runs as PID 1.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/oxwright"]
CMD ["--help"]
