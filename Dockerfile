# slicefit's container image: built with Debian 12's compiler and -dev
# packages, run on debian:12-slim with only the matching runtime libraries,
# as a non-root user. It holds bin/slicefit (the extender the Deployment in
# manifests/ runs) and bin/slicefit-replay (to replay a policy change first).
#
#   docker build -t registry.example.com/slicefit:0.1.0 .
#
# docs/operators.md has the whole installation.

FROM debian:12-slim AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential pkg-config \
      libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libuv1-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The Makefile builds bin/slicefit only once extender/main.c exists: say so
# rather than ship an image without the daemon.
RUN make -j"$(nproc)" all \
 && if [ ! -x bin/slicefit ]; then echo "bin/slicefit was not built (no extender/main.c)" >&2; exit 1; fi \
 && make install DESTDIR=/out PREFIX=/usr/local

FROM debian:12-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libmicrohttpd12 libjansson4 libcurl4 libuv1 libyaml-0-2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/local/bin/ /usr/local/bin/
# The uid and gid manifests/deployment.yaml runs as.
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["/usr/local/bin/slicefit"]
