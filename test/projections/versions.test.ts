// Two versions of the code running side by side over one database (a rolling deploy): neither
// drops the other's tables; the newer projector, once it holds the lock, builds its version
// beside the live tables and swaps it in; an older projector then leaves the newer tables alone.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { comparePositions, type Position } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { apiKeysProjection } from '../../projections/api-keys.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import type { Projection } from '../../projections/projection.ts';
import { rebuildReadModels } from '../../projections/rebuild.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { VersionMismatch, readModelsReady } from '../../projections/versions.ts';
import { createTestDatabase } from '../support/db.ts';

/** The next version of the api_keys read model: one more column. */
const apiKeysV2: Projection = {
  ...apiKeysProjection,
  version: apiKeysProjection.version + 1,
  ddl: (schema) => apiKeysProjection.ddl(schema).replace('created_at timestamptz NOT NULL\n    );', 'created_at timestamptz NOT NULL,\n      reviewed boolean NOT NULL DEFAULT false\n    );'),
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A database of its own for one test, with what every test here does on it: runners started on
 * a schema (stopped when the test ends), an organization opened (an event of api_keys), and a
 * wait for a runner to pass a position. Failures the runners report are collected.
 */
async function versionsDatabase(t: TestContext) {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  const failures: unknown[] = [];
  const start = async (projection: Projection, schema = READ_SCHEMA) => {
    const runner = new ProjectionRunner(store, db.pool, [projection], { schema });
    t.after(() => runner.stop());
    await runner.start((error) => failures.push(error));
    return runner;
  };
  const open = (n: number) =>
    store.append(`account-org_${n}`, [{ type: 'OrganizationOpened', data: { orgId: `org_${n}`, name: `Org ${n}`, email: `${n}@example.test`, plan: 'free', rateLimit: null, at: '2026-03-01T00:00:00.000Z' } }], 'no_stream');
  const passed = (runner: ProjectionRunner, target: Position) =>
    until(`the projector to pass ${target.commit}/${target.prepare}`, async () => {
      const p = runner.position$.value;
      return p && comparePositions(p, target) >= 0 ? true : undefined;
    });
  return { db, store, failures, start, open, passed };
}

test('a newer projector stands by beside an older one, then builds beside and swaps; an older one never touches newer tables', async (t) => {
  assert.notEqual(apiKeysV2.ddl('rm'), apiKeysProjection.ddl('rm'), 'the v2 fixture changes the tables');
  const { db, failures, start, open, passed } = await versionsDatabase(t);
  const organizations = async () => (await db.pool.query(`SELECT org_id FROM rm.organizations ORDER BY org_id`)).rows.map((r) => r.org_id);
  const hasReviewedColumn = async () =>
    (await db.pool.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = 'rm' AND table_name = 'organizations' AND column_name = 'reviewed'`)).rowCount === 1;

  const v1 = await start(apiKeysProjection);
  assert.ok(v1.active, `v1 did not start: ${failures.map(String).join('; ')}`);
  await passed(v1, (await open(1)).position);

  // The new version starts while the old one projects: it stands by and drops nothing.
  const v2 = await start(apiKeysV2);
  assert.equal(v2.active, false);
  assert.deepEqual(await organizations(), ['org_1']);
  await passed(v1, (await open(2)).position);
  assert.deepEqual(await organizations(), ['org_1', 'org_2']);
  assert.equal(await hasReviewedColumn(), false);
  assert.ok(await readModelsReady(db.pool, READ_SCHEMA, [apiKeysProjection]));
  assert.equal(await readModelsReady(db.pool, READ_SCHEMA, [apiKeysV2]), false, 'the new version is not there yet');

  // The old projector goes away: the new one takes the lock, builds its version beside, swaps it in.
  await v1.stop();
  await until('v2 to move the read model to version 2', async () =>
    (await db.pool.query(`SELECT version FROM rm.projection_versions WHERE projection = 'api_keys'`)).rows[0]?.version === 2 ? true : undefined);
  assert.equal(await hasReviewedColumn(), true);
  assert.deepEqual(await organizations(), ['org_1', 'org_2']);
  await passed(v2, (await open(3)).position);
  assert.deepEqual(await organizations(), ['org_1', 'org_2', 'org_3']);
  assert.ok(await readModelsReady(db.pool, READ_SCHEMA, [apiKeysV2]));
  assert.ok(await readModelsReady(db.pool, READ_SCHEMA, [apiKeysProjection]), 'an older reader may serve from newer tables');

  // An older projector started now, with the lock free, still leaves the newer tables alone.
  await v2.stop();
  const old = await start(apiKeysProjection);
  assert.equal(old.active, false);
  assert.match(old.standbyReason ?? '', /newer/);
  await open(4);
  assert.equal(await hasReviewedColumn(), true);
  assert.deepEqual(await organizations(), ['org_1', 'org_2', 'org_3']);
  const { rows } = await db.pool.query(`SELECT version FROM rm.projection_versions WHERE projection = 'api_keys'`);
  assert.equal(rows[0].version, 2);
  assert.deepEqual(failures, []);
});

test('a rebuild of the older version started before the newer projector moved the tables is refused at its swap, and swaps nothing', async (t) => {
  const { db, store, failures, start, open, passed } = await versionsDatabase(t);

  const v1 = await start(apiKeysProjection);
  await passed(v1, (await open(1)).position);
  await v1.stop(); // the old deploy goes away

  let v2: ProjectionRunner | undefined;
  const rebuilt = rebuildReadModels(store, db.pool, {
    projections: [apiKeysProjection],
    liveSchema: READ_SCHEMA,
    // The rebuild of version 1 has built; version 2 is deployed before it swaps, and its projector moves the tables.
    onBuilt: async () => {
      v2 = await start(apiKeysV2);
      assert.ok(v2.active, `v2 did not start: ${failures.map(String).join('; ')}`);
    },
  });
  await assert.rejects(rebuilt, (error: Error) => {
    assert.ok(error instanceof VersionMismatch, String(error));
    assert.match(error.message, /api_keys is at version 2 in rm, the build in rm_rebuild has 1 .*nothing was swapped in/);
    return true;
  });

  const { rows } = await db.pool.query(`SELECT version FROM rm.projection_versions WHERE projection = 'api_keys'`);
  assert.equal(rows[0].version, 2);
  // The version-2 projector goes on projecting into its tables.
  await passed(v2!, (await open(2)).position);
  const organizations = await db.pool.query(`SELECT org_id, reviewed FROM rm.organizations ORDER BY org_id`);
  assert.deepEqual(organizations.rows, [{ org_id: 'org_1', reviewed: false }, { org_id: 'org_2', reviewed: false }]);
  assert.deepEqual(failures, []);
});

test('a move to a new version finds the build of a still newer one, killed and rolled back, and builds afresh', async (t) => {
  const { db, failures, start, open } = await versionsDatabase(t);
  await open(1);
  await (await start(apiKeysProjection)).stop();
  // Version 3's move, killed halfway through its build beside; that deploy was rolled back to version 2.
  await (await start({ ...apiKeysV2, version: apiKeysV2.version + 1 }, `${READ_SCHEMA}_upgrade`)).stop();

  const v2 = await start(apiKeysV2);
  assert.ok(v2.active, `version 2 did not move the read model: ${failures.map(String).join('; ')}`);
  const { rows } = await db.pool.query(`SELECT version FROM rm.projection_versions WHERE projection = 'api_keys'`);
  assert.equal(rows[0].version, 2);
  assert.deepEqual((await db.pool.query(`SELECT org_id, reviewed FROM rm.organizations`)).rows, [{ org_id: 'org_1', reviewed: false }]);
  assert.deepEqual(failures, []);
});
