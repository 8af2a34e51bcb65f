# ngx_http_mcp_module on Debian 12's nginx, as a container image.
#
#   scripts/image                  builds it here (podman) and checks it
#   docker build -t ngx-mcp .      elsewhere
#
# Two stages: "build" compiles the module against Debian's nginx-dev
# (scripts/build), the runtime stage is debian:bookworm-slim with
# Debian's nginx package (the smallest one: nginx-light and nginx-core
# only add modules to it) and the module.  nginx runs as UID 10001 on
# port 8080 and writes only to /tmp, so the root filesystem may be
# read-only.  The nginx.conf is conf/docker/nginx.conf.
#
# Build arguments:
#   MCP_FIXTURES=1   a demo: the image also holds the test sets' module
#                    (fixtures/, ngx_http_mcp_fixtures_module.so), loaded
#                    by /etc/nginx/modules-enabled/50-mcp-fixtures.conf,
#                    and serves the "everything" set at /mcp (default 0:
#                    the module alone, no test sets in the image; /mcp
#                    serves the lifecycle methods with no tools, and the
#                    image is meant to get its nginx.conf from you, for
#                    example a gateway with mcp_pass)
#   VERSION          the image's version label (scripts/image passes the
#                    module's NGX_HTTP_MCP_MODULE_VERSION)
#   SOURCE           the repository's address, for the source label
#
# The label io.modelcontextprotocol.server.name is the "name" of
# server.json: the MCP registry checks that they match.
#   DEBIAN           the base image

ARG DEBIAN=debian:bookworm-slim

FROM ${DEBIAN} AS build

# Debian's nginx package starts nginx on port 80 when it is installed:
# never in a build
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d \
    && chmod +x /usr/sbin/policy-rc.d

WORKDIR /src
# the compiler and nginx-dev in a layer of their own, kept while src/ changes
COPY scripts/lib.sh ./scripts/
RUN . scripts/lib.sh && mcp_install_build_deps && mcp_apt_install binutils
COPY scripts/build ./scripts/
COPY config ngx_http_mcp_module.c ./
COPY src ./src
COPY fixtures ./fixtures

# scripts/build makes both .so files; only the demo takes the fixtures'
ARG MCP_FIXTURES=0
RUN so=$(scripts/build | sed -n 's/^build: //p') \
    && install -D -m 0644 "$so" /out/modules/ngx_http_mcp_module.so \
    && mkdir -p /out/mcp.d /out/modules-enabled \
    && if [ "$MCP_FIXTURES" = 1 ]; then \
           install -m 0644 "$(dirname "$so")/ngx_http_mcp_fixtures_module.so" \
               /out/modules/ \
           && echo 'load_module  /usr/lib/nginx/modules/ngx_http_mcp_fixtures_module.so;' \
               > /out/modules-enabled/50-mcp-fixtures.conf \
           && echo 'mcp_builtin  everything;' > /out/mcp.d/everything.conf; \
       fi \
    && strip --strip-unneeded /out/modules/*.so


FROM ${DEBIAN}

ARG VERSION=0.1.0
# the repository's public address: pass yours (--build-arg SOURCE=...)
ARG SOURCE=https://example.invalid/ngx_http_mcp_module
LABEL org.opencontainers.image.title="ngx_http_mcp_module" \
      org.opencontainers.image.description="nginx with ngx_http_mcp_module: a Model Context Protocol (Streamable HTTP) endpoint and gateway" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="BSD-2-Clause" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim" \
      io.modelcontextprotocol.server.name="io.github.ngx-mcp/ngx-http-mcp-module"

RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d \
    && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           --no-install-recommends nginx libcjson1 libhiredis0.14 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
              /etc/nginx/sites-enabled/* /etc/nginx/modules-enabled/* \
              /var/log/nginx/* \
    && groupadd --gid 10001 mcp \
    && useradd --uid 10001 --gid 10001 --no-create-home \
               --home-dir /nonexistent --shell /usr/sbin/nologin mcp

COPY --from=build /out/modules/ /usr/lib/nginx/modules/
COPY --from=build /out/modules-enabled /etc/nginx/modules-enabled
COPY --from=build /out/mcp.d /etc/nginx/mcp.d
COPY conf/docker/nginx.conf conf/docker/ops.conf /etc/nginx/
COPY conf/docker/mcp-healthcheck /usr/local/bin/
COPY LICENSE /usr/share/doc/ngx-http-mcp/LICENSE

USER 10001:10001
EXPOSE 8080
# pid, temp files; mount a tmpfs or emptyDir here with a read-only root
VOLUME ["/tmp"]
# nginx's graceful stop: open requests and streams finish first
STOPSIGNAL SIGQUIT
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/mcp-healthcheck"]

# -e stderr: the compiled-in error log under /var/log/nginx is never
# opened (not writable by UID 10001)
CMD ["nginx", "-e", "stderr", "-g", "daemon off;"]
