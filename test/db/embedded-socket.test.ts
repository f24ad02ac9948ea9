// How the embedded server is reached: over the Unix socket in its cluster folder when the
// socket's path fits the kernel's limit, over TCP loopback otherwise.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';

async function clientAddressOver(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ addr: string | null }>('select inet_client_addr()::text as addr')).rows[0]!.addr;
  } finally {
    await client.end();
  }
}

async function withServer(dataDir: string, check: (url: string) => Promise<void>): Promise<void> {
  const server = await startEmbeddedPostgres({ dataDir, detached: false, settings: { fsync: 'off' } });
  try {
    await check(server.url);
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

test('the embedded server is reached over the Unix socket in its cluster folder; TCP stays open', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-sock-'));
  await withServer(dataDir, async (url) => {
    assert.equal(new URL(url).searchParams.get('host'), path.join(dataDir, 'pg'));
    assert.equal(await clientAddressOver(url), null, 'a Unix socket has no client address');
    const tcp = new URL(url);
    tcp.searchParams.delete('host');
    assert.equal(await clientAddressOver(tcp.toString()), '127.0.0.1/32');
  });
});

test('a data folder whose socket path would pass 107 bytes is reached over TCP', async () => {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-sock-'));
  fs.chmodSync(parent, 0o711); // run as root, the server runs as postgres and must pass through it
  const dataDir = path.join(parent, 'a-folder-name-long-enough-to-push-the-socket-path-past-the-limit-of-the-kernel');
  try {
    await withServer(dataDir, async (url) => {
      assert.equal(new URL(url).searchParams.get('host'), null);
      assert.equal(await clientAddressOver(url), '127.0.0.1/32');
    });
  } finally {
    fs.rmSync(parent, { recursive: true, force: true });
  }
});

test('a server started for a folder whose password no longer matches is stopped again, not left running', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-sock-'));
  try {
    await (await startEmbeddedPostgres({ dataDir, detached: false, settings: { fsync: 'off' } })).stop();
    const infoFile = path.join(dataDir, 'postgres.json');
    const info = JSON.parse(fs.readFileSync(infoFile, 'utf8'));
    const wrong = (url: string) => url.replace(`:${encodeURIComponent(info.password)}@`, ':not-the-password@');
    fs.writeFileSync(infoFile, JSON.stringify({ ...info, password: 'not-the-password', url: wrong(info.url), adminUrl: wrong(info.adminUrl) }));
    await assert.rejects(startEmbeddedPostgres({ dataDir, detached: false, settings: { fsync: 'off' } }), /password authentication failed/);
    assert.equal(fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), false, 'the server was left running');
  } finally {
    // A server left running by a failure of this test is stopped all the same.
    const postmaster = path.join(dataDir, 'pg', 'postmaster.pid');
    if (fs.existsSync(postmaster)) process.kill(Number(fs.readFileSync(postmaster, 'utf8').split('\n')[0]), 'SIGQUIT');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
