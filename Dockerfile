# The Arena dedicated server as a container image, with the arena-agones
# sidecar beside it (for Agones fleets: deploy/agones/; the pod runs the same
# image twice, the sidecar with `command: ["arena-agones"]`).
#
#   docker build -t arena-server .
#   docker run --rm -p 27015:27015/udp arena-server --name "My server" --bots 4
#
# Options also come from the environment (ARENA_NAME, ARENA_BOTS, ...; see
# `arena server --help`) or a mounted config file (--config /etc/arena/server.ron).
# The server stops cleanly on SIGTERM (docker stop): every player is told at once.

# Build stage: the release binaries. rustc 1.95, as the workspace pins;
# protoc for the Agones SDK's gRPC code (the sidecar has its own lock file);
# cmake for libopus, built from its bundled source (voice: `arena bots
# --voice-file` and the lab are in the same binary).
# `--no-default-features` leaves the game's window out: no renderer, winit
# or audio to build, and no ALSA headers needed.
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends protobuf-compiler cmake \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --no-default-features --bin arena \
 && cp target/release/arena /usr/local/bin/arena \
 && cargo build --release --locked --manifest-path crates/arena_agones/Cargo.toml --bin arena-agones \
 && cp crates/arena_agones/target/release/arena-agones /usr/local/bin/arena-agones

# Run stage: only what the binary loads (`ldd arena`: libc and libgcc,
# both in the base image).
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin arena
COPY --from=build /usr/local/bin/arena /usr/local/bin/arena-agones /usr/local/bin/
USER 10001
EXPOSE 27015/udp
# Healthy while the server answers a server query (A2S) on its own port.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["arena", "servers", "127.0.0.1:27015", "--wait-ms", "2000"]
# It listens on [::]:27015 (IPv4 and IPv6) unless told otherwise (--bind,
# ARENA_BIND). The same image runs an internet master (the health check
# asks a game server, so leave it out):
#   docker run --rm -p 27950:27950/udp --no-healthcheck --entrypoint arena arena-server master
ENTRYPOINT ["arena", "server"]
