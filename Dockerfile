# slicefit's container image: built with Debian 12's compiler and -dev
# packages; the runtime image is FROM scratch and holds the two programs,
# the exact shared libraries they load, the CA bundle and nothing else: no
# shell, no package manager, no coreutils. It runs as a non-root
# user. bin/slicefit is the extender the Deployment in manifests/ runs;
# bin/slicefit-replay replays a policy change first.
#
#   docker build -t registry.example.com/slicefit:0.1.0 .
#   docker push registry.example.com/slicefit:0.1.0   # prints the digest
#
# Without a container engine, `make image` builds the same root file system
# as a reproducible OCI layout (image/mkimage), whose digest manifests/ pins;
# an engine's build stamps times, so its digest differs on every build.
#
# Pin the base image too: replace debian:12-slim below with
# debian:12-slim@sha256:<digest> (docker buildx imagetools inspect
# debian:12-slim shows it). docs/operators.md has the whole installation,
# and how the manifests reference the image by digest.

FROM debian:12-slim AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential pkg-config \
      libmicrohttpd-dev libgnutls28-dev libjansson-dev libcurl4-openssl-dev libuv1-dev libyaml-dev \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The Makefile builds bin/slicefit only once extender/main.c exists: say so
# rather than ship an image without the daemon.
RUN make -j"$(nproc)" all \
 && if [ ! -x bin/slicefit ]; then echo "bin/slicefit was not built (no extender/main.c)" >&2; exit 1; fi \
 && make install DESTDIR=/out PREFIX=/usr/local
# The root file system of the runtime image: the programs, every library
# ldd names (with the dynamic loader), and the CA bundle. glibc 2.36 has
# the files and dns NSS modules built in, so name lookup needs nothing more.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp \
 && mkdir -p /rootfs/usr && cp -a /out/usr/local /rootfs/usr/ \
 && for lib in $(ldd /out/usr/local/bin/slicefit /out/usr/local/bin/slicefit-replay \
                 | awk '/=>/ {print $3} /ld-linux/ {print $1}' | sort -u); do \
      cp --parents -L "$lib" /rootfs/; \
    done \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/ /
# The uid and gid manifests/deployment.yaml runs as.
USER 65532:65532
EXPOSE 8888 8889
ENTRYPOINT ["/usr/local/bin/slicefit"]
