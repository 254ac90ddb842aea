# Plant Store: the HTTP service on Node.js 24.
#   docker build -t plant-store .
#   docker run --init -p 3000:3000 plant-store            (--init: see docs/deployment.md)
# Two stages: the build stage compiles with the dev dependencies (TypeScript), then drops them; the runtime stage
# holds package.json, the production dependencies and dist/ (what runs in production only), and runs as `node`.
ARG BASE=node:24-slim

FROM ${BASE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.production.json ./
COPY scripts/build.mjs scripts/
COPY domain domain
COPY application application
COPY adapters adapters
COPY bootstrap bootstrap
RUN npm run build:production && npm prune --omit=dev --no-audit --no-fund

FROM ${BASE}
ENV PORT=3000
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
# The official node images have this account (uid 1000); nothing under /app is writable by it.
USER node
EXPOSE 3000
# Node.js, not curl (the slim image has none): 0 when /healthz answers 200 within 2 s. PORT is the service's.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains within SHUTDOWN_TIMEOUT_MS (default 10 s) and exits 0: give the runtime's stop timeout more than that.
STOPSIGNAL SIGTERM
CMD ["node", "dist/bootstrap/main.js"]
