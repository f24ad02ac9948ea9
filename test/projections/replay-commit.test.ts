// A build in the database commits each read model on its connection while the lane goes on with
// the next one on a spare connection (projections/replay.ts). A commit that fails there is not
// lost: for good, its read model is built page by page; for now, the build fails with it, and
// the process does not (an unobserved rejection would take it down).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Projection } from '../../projections/projection.ts';
import { ident } from '../../projections/projection.ts';
import { buildBeside } from '../../projections/runner.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
  await service.organization({ usd: '1' });
  await service.organization({ usd: '2' });
});
after(() => service.close());

/** A read model of the organizations opened, made by `replaySql` (over the FROM item `log`) in a rebuild. */
function organizations(name: string, replaySql: (table: string, log: string, fail: string) => string): Projection {
  const table = (schema: string) => `${ident(schema)}.${ident(name)}`;
  return {
    name,
    version: 1,
    tables: [name],
    consumes: ['OrganizationOpened'],
    ddl: (schema) => `CREATE TABLE IF NOT EXISTS ${table(schema)} (org_id text PRIMARY KEY)`,
    async apply(client, schema, events) {
      const ids = events.filter((e) => e.type === 'OrganizationOpened').map((e) => (e.data as { orgId: string }).orgId);
      await client.query(`INSERT INTO ${table(schema)} SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [ids]);
    },
    async replay(client, schema, source) {
      await client.query(replaySql(table(schema), source.events, `${ident(schema)}.${ident(`${name}_fail`)}`));
    },
  };
}

const copyOrganizations = (table: string, log: string) =>
  `INSERT INTO ${table} SELECT d."orgId" FROM ${log}, json_to_record(log.data) AS d("orgId" text) WHERE log.type = 'OrganizationOpened'`;

/** Replays whose transaction fails at its commit, with `sqlstate`: a deferred trigger on a table of their own raises it. */
const failingAtCommit = (sqlstate: string) => (table: string, log: string, fail: string) => `
  ${copyOrganizations(table, log)};
  CREATE TABLE ${fail} (x int);
  CREATE FUNCTION ${fail}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'fails at commit' USING ERRCODE = '${sqlstate}'; END $$;
  CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON ${fail} DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ${fail}();
  INSERT INTO ${fail} VALUES (1)`;

/** Still at work when the one before it fails at its commit on the other connection. */
const slow = (table: string, log: string) => `SELECT pg_sleep(0.5); ${copyOrganizations(table, log)}`;

async function rows(schema: string, table: string): Promise<string[]> {
  const { rows } = await service.db.pool.query<{ org_id: string }>(`SELECT org_id FROM ${ident(schema)}.${ident(table)} ORDER BY org_id`);
  return rows.map((r) => r.org_id);
}

test('a read model whose commit fails for good on a spare connection is built page by page, the next one replayed', async () => {
  const build = 'rm_commit_refused';
  const projections = [organizations('refused', failingAtCommit('23505')), organizations('after', slow)];
  // One lane: the first read model commits on it while the second goes on a spare connection.
  await buildBeside(service.store, service.work.pool, projections, build, { replay: { connections: 1 } });
  const opened = await rows('rm', 'usage');
  assert.equal(opened.length, 2);
  assert.deepEqual(await rows(build, 'refused'), opened, 'built page by page, without the row of the failed replay');
  assert.deepEqual(await rows(build, 'after'), opened);
  const { rows: checkpoints } = await service.db.pool.query(`SELECT projection FROM ${build}.checkpoints ORDER BY projection`);
  assert.deepEqual(checkpoints.map((c) => c.projection), ['after', 'refused']);
});

test('a commit that fails for now on a spare connection fails the build, and not the process', async () => {
  const build = 'rm_commit_transient';
  const projections = [organizations('conflicted', failingAtCommit('40001')), organizations('after', slow)];
  await assert.rejects(buildBeside(service.store, service.work.pool, projections, build, { replay: { connections: 1 } }), (error: { code?: string }) => error.code === '40001');
  const { rows: checkpoints } = await service.db.pool.query(`SELECT projection FROM ${build}.checkpoints WHERE projection = 'conflicted'`);
  assert.equal(checkpoints.length, 0, 'nothing of the failed commit is kept');
});
