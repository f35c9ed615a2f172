# syntax=docker/dockerfile:1
# Build stage: install every dependency and compile TypeScript.
FROM node:20-bookworm-slim AS build
# A C compiler for the native addon (native/malloc-trim.c); Node's image carries its headers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY native ./native
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and the compiled output only, as an unprivileged user.
FROM node:20-bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    PORT=5260 \
    AGENT_PORT=5263 \
    DATA_DIR=/var/lib/stack-orchestrator
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
RUN mkdir -p /var/lib/stack-orchestrator && chown node:node /var/lib/stack-orchestrator
USER node
VOLUME ["/var/lib/stack-orchestrator"]
EXPOSE 5260 5263
# The interface document's container check: a failing-on-error HTTP request to /health/ready.
HEALTHCHECK --interval=30s --timeout=10s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:5260/health/ready || exit 1
# tini forwards SIGTERM to node, which drains requests in flight and exits 0.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/server/bundle/main.mjs"]
