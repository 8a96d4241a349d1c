// The live inbox: a hydrated inbox follows /inbox/stream (server-sent events
// for the signed-in person) and fetches its rows again when a change concerns
// that person, without a reload. Also the stream over plain HTTP: 401 without
// a session, an `inbox` event for a concerning change, none for another
// person's, and a catch-up event with `?since=`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, PASSWORDS, signIn, waitForHydration } from './support.mjs';

const CONFIG = PEOPLE.replace('groups = ["procurement"]', 'groups = ["procurement"]\nroles = ["buyer"]');
const GRACE_KEY = 'e2e-grace-key-0123456789';

let server;

function gateWorkflow(id, gate) {
  return {
    id,
    name: `Live ${id}`,
    version: '1.0',
    nodes: [
      {
        id: 'review',
        typeId: 'core.approvalGate',
        name: 'Review',
        config: { title: `Approve ${id}`, actions: ['accept', 'reject'], ...gate },
      },
      { id: 'done', typeId: 'core.noop', name: 'Done', config: {} },
    ],
    edges: [{ id: 'next', sourceNodeId: 'review', targetNodeId: 'done', triggerRule: 'all_success' }],
  };
}

const seg = (runId) => encodeURIComponent(runId).replace(/%2F/gi, '~2F');

async function startRun(workflowId) {
  const res = await api(server.url, 'POST', '/runs', { workflowId });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}

/** Resolves the gate with grace's key (finance). */
async function accept(runId) {
  const res = await fetch(`${server.url}/runs/${seg(runId)}/interrupts/review`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GRACE_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resumeValue: { action: 'accept' } }),
  });
  assert.equal(res.status, 200, await res.text());
}

/** A session cookie for `user`, signed in through the form post. */
async function sessionCookie(user) {
  const res = await fetch(`${server.url}/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: new URLSearchParams({ user, password: PASSWORDS[user], next: '/' }),
  });
  assert.equal(res.status, 303);
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).find((c) => c.startsWith('tollgate_session='));
  assert.ok(cookie, 'a session cookie');
  return cookie;
}

/** Opens the stream; `next(ms)` resolves to the next `inbox` event's data, or null after `ms`. */
async function openStream(cookie, query = '') {
  const ctrl = new AbortController();
  const res = await fetch(`${server.url}/inbox/stream${query}`, { headers: { cookie }, signal: ctrl.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let pending = reader.read();
  return {
    async next(ms) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = /event: inbox\ndata: (.*)\n\n/.exec(buf);
        if (m) { buf = buf.slice(m.index + m[0].length); return JSON.parse(m[1]); }
        const left = deadline - Date.now();
        if (left <= 0) return null;
        const got = await Promise.race([pending, new Promise((ok) => setTimeout(() => ok('timeout'), left))]);
        if (got === 'timeout') return null;
        if (got.done) return null;
        buf += decoder.decode(got.value, { stream: true });
        pending = reader.read();
      }
    },
    close: () => { pending.catch(() => {}); ctrl.abort(); },
  };
}

before(async () => {
  server = await startServer(CONFIG);
  for (const wf of [
    gateWorkflow('live-finance', { approverGroupRefs: ['finance'] }),
    gateWorkflow('live-procure', { approverRoleRefs: ['buyer'] }),
  ]) {
    const res = await api(server.url, 'PUT', `/workflows/${wf.id}`, wf);
    assert.ok(res.status === 201 || res.status === 200, `${wf.id}: ${JSON.stringify(res.body)}`);
  }
});

after(async () => {
  await server?.stop();
});

test('the stream refuses a request without a session (401)', async () => {
  const res = await fetch(`${server.url}/inbox/stream`, { headers: { accept: 'text/event-stream' } });
  assert.equal(res.status, 401);
  const forged = await fetch(`${server.url}/inbox/stream`, { headers: { cookie: 'tollgate_session=forged' } });
  assert.equal(forged.status, 401);
});

test('the stream sends an event for changes that concern the person, not for others', async () => {
  const cookie = await sessionCookie('ada');
  const stream = await openStream(cookie);
  // Only linus (buyer) may decide this one: nothing for ada.
  await startRun('live-procure');
  assert.equal(await stream.next(1000), null, 'a procurement run is not ada\'s concern');
  // ada is in finance: created, then decided, each an event.
  const run = await startRun('live-finance');
  const created = await stream.next(5000);
  assert.ok(created && created.changes >= 1, JSON.stringify(created));
  await accept(run);
  assert.ok(await stream.next(5000), 'deciding it is an event too');
  stream.close();

  // `since` older than the engine's change count: the stream starts with an event.
  const late = await openStream(cookie, '?since=0');
  assert.ok(await late.next(2000), 'catch-up event');
  late.close();
});

test('a hydrated inbox shows a new interrupt and drops a decided one without a reload, under the CSP', async () => {
  const ctx = await launchBrowser();
  const page = await ctx.newPage();
  // Anything the Content-Security-Policy blocks (a script, the wasm, the stream) is recorded.
  const violations = [];
  await page.exposeFunction('__cspViolation', (v) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__cspViolation(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const policies = [];
  page.on('response', (r) => {
    // Pages, not the 303 that a sign-in post answers with.
    const html = (r.headers()['content-type'] ?? '').startsWith('text/html');
    if (r.request().resourceType() === 'document' && html) policies.push(r.headers()['content-security-policy'] ?? '');
  });
  await signIn(page, server.url, 'ada');
  assert.equal(new URL(page.url()).pathname, '/');
  await waitForHydration(page);
  assert.ok(policies.length > 0 && policies.every((p) => /frame-ancestors 'none'/.test(p) && /'nonce-/.test(p)),
    `every page carries the policy: ${JSON.stringify(policies)}`);
  await page.waitForSelector('#inbox-live[data-live="open"]', { timeout: 15000 });
  // A mark that a reload would wipe.
  await page.evaluate(() => { window.__sameDocument = true; });
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations += 1; });

  const other = await startRun('live-procure');
  const run = await startRun('live-finance');
  const row = `#inbox tbody tr[data-run="${run}"]`;
  await page.waitForSelector(row, { timeout: 10000 });
  assert.equal(await page.$(`#inbox tbody tr[data-run="${other}"]`), null, 'not ada\'s to decide');
  assert.match(await page.textContent(`${row} td a`), /Approve live-finance/);
  assert.match(await page.textContent('#inbox-count'), /waiting for you/);

  await accept(run);
  await page.waitForSelector(row, { state: 'detached', timeout: 10000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  assert.equal(navigations, 0, 'no navigation');
  assert.deepEqual(violations, [], 'nothing was blocked by the policy');
  await ctx.close();
});

test('without JavaScript the inbox is the same page and Refresh is a link', async () => {
  const ctx = await launchBrowser({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await signIn(page, server.url, 'grace');
  assert.equal(await page.getAttribute('#inbox-live', 'data-live'), 'closed');
  const run = await startRun('live-finance');
  assert.equal(await page.$(`#inbox tbody tr[data-run="${run}"]`), null, 'no live update without JavaScript');
  await Promise.all([page.waitForNavigation(), page.click('#refresh-inbox')]);
  assert.ok(await page.$(`#inbox tbody tr[data-run="${run}"]`), 'Refresh reloads the page');
  await ctx.close();
});
