// Behind a proxy every browser reaches the service from the proxy's address. With TRUST_PROXY
// naming that proxy, the per-address limits (sign-in: 20 a minute; requests without a valid
// key: AUTH_FAILURE_RATE_LIMIT a minute) count each browser by the address the proxy forwards
// (X-Forwarded-For), so one stranger's junk does not lock everyone out. Without it (the default)
// the headers are not believed: every browser behind the proxy shares the proxy's allowance.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';

const PROXY = '10.0.0.2';
const STRANGER = '198.51.100.66';
const MEMBER = '203.0.113.5';
const FAILED_AUTH_LIMIT = 3;

let trusting: TestService | undefined;
let trustingNone: TestService | undefined;
before(async () => {
  trusting = await startTestService({ env: { TRUST_PROXY: PROXY }, failedAuthLimit: FAILED_AUTH_LIMIT });
  trustingNone = await startTestService({ failedAuthLimit: FAILED_AUTH_LIMIT });
});
after(async () => {
  await trusting?.close();
  await trustingNone?.close();
});

/** A sign-in POST through the proxy, from the browser at `client` (no CSRF token: a stranger's junk, or 403). */
const signInThroughProxy = (service: TestService, client: string) =>
  service.app.inject({
    method: 'POST',
    url: '/login',
    remoteAddress: PROXY,
    headers: { host: 'dashboard.example.test', 'x-forwarded-proto': 'https', 'x-forwarded-for': client, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'email=someone%40example.test&password=whatever',
  });

/** An API request without a key through the proxy, from `client`. */
const keylessThroughProxy = (service: TestService, client: string) =>
  service.app.inject({ url: '/api/v1/videos', remoteAddress: PROXY, headers: { 'x-forwarded-for': client } });

describe('per-address limits behind a proxy', () => {
  it('with TRUST_PROXY naming the proxy, a stranger\'s 20 sign-ins a minute limit the stranger, not a member behind the same proxy', async () => {
    const service = trusting!;
    for (let i = 1; i <= 20; i++) assert.notEqual((await signInThroughProxy(service, STRANGER)).statusCode, 429, `the stranger's sign-in ${i} is within the limit`);
    assert.equal((await signInThroughProxy(service, STRANGER)).statusCode, 429, 'the stranger\'s 21st is limited');
    const member = await signInThroughProxy(service, MEMBER);
    assert.equal(member.statusCode, 403, `the member is not limited (only the missing CSRF token is refused): ${member.statusCode}`);
  });

  it('with TRUST_PROXY naming the proxy, requests without a valid key are limited per browser', async () => {
    const service = trusting!;
    for (let i = 1; i <= FAILED_AUTH_LIMIT; i++) assert.equal((await keylessThroughProxy(service, STRANGER)).statusCode, 401, `the stranger's request ${i}`);
    assert.equal((await keylessThroughProxy(service, STRANGER)).statusCode, 429, 'the stranger is limited');
    assert.equal((await keylessThroughProxy(service, MEMBER)).statusCode, 401, 'another browser is not');
  });

  it('without TRUST_PROXY, forwarded addresses are not believed: every browser behind the proxy shares its allowance', async () => {
    const service = trustingNone!;
    for (let i = 1; i <= 20; i++) assert.notEqual((await signInThroughProxy(service, STRANGER)).statusCode, 429, `sign-in ${i}`);
    assert.equal((await signInThroughProxy(service, MEMBER)).statusCode, 429, 'the proxy\'s sign-in allowance is used up');
    for (let i = 1; i <= FAILED_AUTH_LIMIT; i++) assert.equal((await keylessThroughProxy(service, STRANGER)).statusCode, 401, `keyless request ${i}`);
    assert.equal((await keylessThroughProxy(service, MEMBER)).statusCode, 429, 'and so is its allowance without a key');
  });
});
