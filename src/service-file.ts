// `${DATA_DIR}/service.json`: where a running service can be reached. With PORT=0 or
// METRICS_PORT=0 the OS picks the ports, so whoever started the process (tests, scripts)
// learns them here. Written once the service is ready, removed on a clean stop; a file left
// by a killed service names a pid that is gone (or reused), so readers check `pid` too.
//
// Several roles may run on one DATA_DIR (`start:api` beside `start:projector`), and the file
// holds one process: the API's, which readers need (the API's URL for links, PORT=0). So a
// process with the API writes it; one with only a metrics port writes it only where no running
// process's file is; one with neither never writes it. A process removes only the file it wrote.
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

/**
 * Written under a temporary name and renamed (or linked), so a reader sees no file or a whole
 * one. Returns whether this process's file is now in place (see the rules above).
 */
export function writeServiceFile(dataDir: string, info: ServiceFile): boolean {
  if (info.api === null && info.metrics === null) return false;
  const file = path.join(dataDir, SERVICE_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(temp, `${JSON.stringify(info)}\n`);
  try {
    if (info.api !== null) {
      fs.renameSync(temp, file);
      return true;
    }
    // Without the API: a link fails where a file is, so an API's written meanwhile stays.
    try {
      fs.linkSync(temp, file);
      return true;
    } catch {
      // a file is there (or the file system has no hard links): whose is it?
    }
    if (readRunningService(dataDir) !== null) return false;
    fs.renameSync(temp, file); // over the file of a process that is gone
    return true;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/**
 * Removes the file if this process wrote it. It is first moved aside and checked there, so a
 * file another process wrote meanwhile is not the one removed: that one is put back, unless an
 * even newer one took its place.
 */
export function removeServiceFile(dataDir: string): void {
  const file = path.join(dataDir, SERVICE_FILE);
  const ours = (at: string) => {
    try {
      return (JSON.parse(fs.readFileSync(at, 'utf8')) as ServiceFile).pid === process.pid;
    } catch {
      return false;
    }
  };
  if (!ours(file)) return;
  const aside = `${file}.${process.pid}.removed`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return; // gone already
  }
  try {
    if (!ours(aside)) fs.linkSync(aside, file);
  } catch {
    // a newer file is in place: it stays
  } finally {
    fs.rmSync(aside, { force: true });
  }
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
