// A log stream for a test service that keeps every line, so a test can show a secret is in none.
import { Writable } from 'node:stream';

export function capturedLog(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { stream, lines };
}
