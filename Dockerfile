# syntax=docker/dockerfile:1
#
# robots-proxy: a forward HTTP(S) proxy that makes bots obey robots.txt.
#
#   docker build -t robots-proxy .
#   docker run --rm -p 127.0.0.1:8080:8080 -p 127.0.0.1:9090:9090 \
#     -v robots-proxy-state:/var/lib/robots-proxy robots-proxy
#   curl -x http://127.0.0.1:8080 -A 'ExampleBot/1.0' http://example.com/
#   docker run --rm -v robots-proxy-state:/var/lib/robots-proxy robots-proxy ca
#
# Publish on 127.0.0.1 (as above), or on one private interface address that a
# firewall restricts: config/docker.yaml admits proxy clients from loopback and
# the private ranges (access.clients; Docker's NAT shows host-local clients as
# the bridge gateway), so anyone on such a network who reaches port 8080 can
# use the proxy. The admin API (9090) needs the bearer token created on first
# start in the volume (admin-token), except /healthz and /ca.pem. Never
# `-p 8080:8080`, which is every interface.
#
# Config: /etc/robots-proxy/config.yaml (config/docker.yaml; mount your own
# over it), named by ROBOTS_PROXY_CONFIG for every command. State (the
# generated interception CA, the ledger): the volume /var/lib/robots-proxy. The proxy runs
# as an unprivileged user.

# A supported Node.js LTS (Node 20 reached its end of life in April 2026). The
# code itself still runs on Node 20 and later (package.json "engines").
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript, then drop the dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first, so this layer is reused while only the sources change.
# --ignore-scripts: `prepare` (tsc) needs the sources, which are not here yet,
# and no other runtime dependency needs an install script.
COPY package.json package-lock.json ./
# better-sqlite3 (the ledger) is a native addon: its install script is the one
# this image runs, and it needs a compiler where no prebuilt binary applies.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json ./
COPY src ./src
RUN npm run build
RUN npm prune --omit=dev --ignore-scripts

# ---- runtime ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# `robots-proxy ca` (and `serve` without --config) read this file, not /app/config/default.yaml,
# whose ./state the unprivileged user cannot create in /app.
ENV ROBOTS_PROXY_CONFIG=/etc/robots-proxy/config.yaml
WORKDIR /app
# A fixed, unprivileged uid/gid, so a volume's ownership is predictable.
RUN groupadd --gid 10001 robots-proxy \
 && useradd --uid 10001 --gid robots-proxy --no-create-home \
      --home-dir /var/lib/robots-proxy --shell /usr/sbin/nologin robots-proxy \
 && mkdir -p /etc/robots-proxy /var/lib/robots-proxy \
 && chown robots-proxy:robots-proxy /var/lib/robots-proxy \
 && chmod 0700 /var/lib/robots-proxy
# node_modules comes from the pruned build stage: no second `npm ci` here.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The report page's own script and style, inlined into /report (read beside dist/).
COPY assets ./assets
COPY config ./config
COPY config/docker.yaml /etc/robots-proxy/config.yaml
USER robots-proxy
VOLUME ["/var/lib/robots-proxy"]
# 8080: the proxy (listen.port); 9090: the admin API, health and metrics (admin.port).
EXPOSE 8080 9090
# Slim images have no curl: ask the admin listener with Node's own fetch.
# Keep it in step with admin.port in the config.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve", "--config", "/etc/robots-proxy/config.yaml"]
