# One image for every role: ROLE=api|projector|scheduler|all (docker-compose.yml runs one per service).
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# DATA_DIR holds the e-mail outbox when SMTP_URL is unset (and the embedded database without DATABASE_URL).
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 ROLE=all
EXPOSE 3000
# The service itself is PID 1, so `docker stop`'s SIGTERM reaches it for a clean shutdown: no
# shell, npx or tsx command in between (npx would take the signal itself; the tsx command
# SIGKILLs a child that does not acknowledge a signal within 30 ms). The role comes from ROLE.
# .npmrc's node options are not read here: the young generation's size is passed as npm start does.
CMD ["node", "--max-semi-space-size=32", "--import", "tsx", "src/main.ts"]
