// `${DATA_DIR}/service.json`: where a running service can be reached. With PORT=0 or
// METRICS_PORT=0 the OS picks the ports, so whoever started the process (tests, scripts)
// learns them here. Written once the service is ready, removed on a clean stop; a file left
// by a killed service names a pid that is gone (or reused), so readers check `pid` too.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface ServiceFile {
  pid: number;
  /** The API's base URL (it also serves /health and /metrics), or null for a role without it. */
  api: string | null;
  /** Where /metrics and /health are served: the API's URL, the metrics port's, or null. */
  metrics: string | null;
}

export const SERVICE_FILE = 'service.json';

/** The URL a local client reaches a bound server at (a wildcard address is reached on loopback). */
export function urlOf(address: AddressInfo | string | null): string | null {
  if (address === null || typeof address === 'string') return null;
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

/** Written under a temporary name and renamed, so a reader sees no file or a whole one. */
export function writeServiceFile(dataDir: string, info: ServiceFile): void {
  const file = path.join(dataDir, SERVICE_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(temp, `${JSON.stringify(info)}\n`);
  fs.renameSync(temp, file);
}

export function removeServiceFile(dataDir: string): void {
  fs.rmSync(path.join(dataDir, SERVICE_FILE), { force: true });
}

/** The running service's file, or null when there is none or its process is gone. */
export function readRunningService(dataDir: string): ServiceFile | null {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(dataDir, SERVICE_FILE), 'utf8')) as ServiceFile;
    process.kill(info.pid, 0);
    return info;
  } catch {
    return null;
  }
}
