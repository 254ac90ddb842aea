# Plant Store: the HTTP service on Node.js 24 or 26 LTS (`--build-arg BASE=node:26-slim`; CI builds on 24).
#   docker build -t plant-store .
#   docker run --init -p 3000:3000 plant-store            (--init: see docs/deployment.md)
# Three stages: `deps` installs the production dependencies from the lockfile (what the runtime takes); `build` adds to
# them only what compiling needs (TypeScript, and the types it checks against: Node's, and pino-pretty's, which
# bootstrap/logger.ts names) at the lockfile's versions, and compiles; the runtime holds package.json, the production
# dependencies, dist/ (what runs in production only) and the compose stack's mongo-init script, and runs as `node`.
ARG BASE=node:24-slim

FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM ${BASE} AS build
# The build tools go to /build/node_modules, above /app: TypeScript finds itself and the @types there by walking up
# from /app, and none of it can reach the runtime stage, which takes /app/node_modules from `deps`.
WORKDIR /build/app
COPY package.json package-lock.json ./
RUN cd /build && npm install --no-audit --no-fund --no-save --no-package-lock $(node -p " \
      const { packages } = require('/build/app/package-lock.json'); \
      ['typescript', '@types/node', 'pino-pretty'].map((n) => n + '@' + packages['node_modules/' + n].version).join(' ')")
COPY --from=deps /app/node_modules node_modules
COPY tsconfig.json tsconfig.production.json ./
COPY scripts/build.mjs scripts/
COPY domain domain
COPY application application
COPY adapters adapters
COPY bootstrap bootstrap
RUN npm run build:production

FROM ${BASE}
ENV PORT=3000
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules node_modules
COPY --from=build /build/app/dist dist
COPY scripts/mongo-init.mjs scripts/
# The official node images have this account (uid 1000); nothing under /app is writable by it.
USER node
EXPOSE 3000
# Node.js, not curl (the slim image has none): 0 when /healthz answers 200 within 2 s. PORT is the service's.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains within SHUTDOWN_TIMEOUT_MS (default 10 s) and exits 0: give the runtime's stop timeout more than that.
STOPSIGNAL SIGTERM
CMD ["node", "dist/bootstrap/main.js"]
