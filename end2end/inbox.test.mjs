// The inbox at scale: search, the deadline and workflow filters, and
// "Approve / Reject selected" with and without JavaScript (results per row,
// a gate that needs an answer refused), axe-core on the inbox with results,
// a refused call (400) and a cross-site post (403).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe, waitForHydration, startGateRun } from './support.mjs';

let server;

/** One approval gate for the finance group; `gate` adds to or overrides its config. */
function gateWorkflow(id, title, gate = {}) {
  return {
    id,
    name: `E2E ${id}`,
    version: '1.0',
    nodes: [
      {
        id: 'review',
        typeId: 'core.approvalGate',
        name: 'Review',
        config: {
          title,
          actions: ['accept', 'reject'],
          approverGroupRefs: ['finance'],
          requestSchema: { type: 'object', properties: { purpose: { type: 'string' } } },
          ...gate,
        },
        inputs: { purpose: { type: 'variable', variableName: 'purpose' } },
      },
    ],
    edges: [],
  };
}

const WORKFLOWS = [
  gateWorkflow('inbox-laptops', 'Buy laptops'),
  gateWorkflow('inbox-chairs', 'Buy chairs'),
  // Due within the hour.
  gateWorkflow('inbox-soon', 'Renew the lease', { timeoutMs: 3_600_000 }),
  // Its resume needs a comment: never decided in bulk.
  gateWorkflow('inbox-why', 'Explain the refund', {
    resumeSchema: {
      type: 'object',
      required: ['action', 'comment'],
      properties: { action: { type: 'string', enum: ['accept', 'reject'] }, comment: { type: 'string' } },
    },
  }),
];

/** Starts a run and waits until its gate is pending; resolves to its interrupt path. */
const startRun = async (workflowId, purpose) => (await startGateRun(server.url, workflowId, { purpose })).path;

/** Decides as grace through the API (clearing up after a test). */
async function decideAs(path, resumeValue) {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: 'Bearer e2e-grace-key-0123456789', 'content-type': 'application/json' },
    body: JSON.stringify({ resumeValue }),
  });
  assert.equal(res.status, 200, await res.text());
}

async function interruptStatus(path) {
  return (await api(server.url, 'GET', path)).body.status;
}

async function personPage(user, options = {}) {
  const ctx = await launchBrowser(options);
  const page = await ctx.newPage();
  await signIn(page, server.url, user);
  return { ctx, page };
}

async function titles(page) {
  const t = await page.$$eval('#inbox tbody tr td a', (as) => as.map((a) => a.textContent));
  return t.sort();
}

/** Ticks the row whose link is `path`. */
async function pick(page, path) {
  await page.check(`#inbox tbody tr:has(a[href="${path}"]) input[name="pick"]`);
}

before(async () => {
  server = await startServer(PEOPLE);
  for (const wf of WORKFLOWS) {
    const res = await api(server.url, 'PUT', `/workflows/${wf.id}`, wf);
    assert.ok(res.status === 201 || res.status === 200, `${wf.id}: ${JSON.stringify(res.body)}`);
  }
});

after(async () => {
  await server?.stop();
});

test('search, deadline and workflow filters narrow the inbox and keep their address', async () => {
  const laptops = await startRun('inbox-laptops', 'Globex 100% renewal');
  const chairs = await startRun('inbox-chairs', 'office');
  const lease = await startRun('inbox-soon', 'lease');
  const { ctx, page } = await personPage('ada', { javaScriptEnabled: false });
  try {
    await page.fill('#filter-q', 'LAPTOP');
    await Promise.all([page.waitForNavigation(), page.click('#apply-filters')]);
    assert.match(page.url(), /[?&]q=LAPTOP/);
    assert.deepEqual(await titles(page), ['Buy laptops']);
    // Request data, with `%` taken as text.
    await page.goto(server.url + '/?q=' + encodeURIComponent('globex 100%'));
    assert.deepEqual(await titles(page), ['Buy laptops']);
    await page.goto(server.url + '/?q=' + encodeURIComponent('globex%renewal'));
    assert.equal(await page.locator('#inbox-empty').count(), 1);

    await page.goto(server.url + '/');
    await page.selectOption('#filter-due', 'day');
    await Promise.all([page.waitForNavigation(), page.click('#apply-filters')]);
    assert.match(page.url(), /[?&]due=day/);
    assert.deepEqual(await titles(page), ['Renew the lease']);
    await page.goto(server.url + '/?due=never');
    assert.ok(!(await titles(page)).includes('Renew the lease'));
    // An older link still works.
    await page.goto(server.url + '/?overdue=1');
    assert.equal(await page.inputValue('#filter-due'), 'overdue');

    await page.goto(server.url + '/');
    await page.selectOption('#filter-workflow', 'inbox-chairs');
    await Promise.all([page.waitForNavigation(), page.click('#apply-filters')]);
    assert.deepEqual(await titles(page), ['Buy chairs']);

    // A search of more than 200 characters is refused.
    const res = await page.goto(server.url + '/?q=' + 'x'.repeat(201));
    assert.equal(res.status(), 400);
    assert.match(await page.textContent('main'), /\bq\b/);
  } finally {
    await ctx.close();
  }
  // Leave the inbox empty for the next tests.
  for (const path of [laptops, chairs, lease]) {
    await decideAs(path, { action: 'reject' });
  }
});

for (const js of [false, true]) {
  test(`Approve selected decides each pick and says per row what happened (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const a = await startRun('inbox-laptops', `a-${js}`);
    const b = await startRun('inbox-chairs', `b-${js}`);
    const why = await startRun('inbox-why', `why-${js}`);
    const { ctx, page } = await personPage('grace', { javaScriptEnabled: js });
    try {
      if (js) await waitForHydration(page);
      for (const path of [a, b, why]) await pick(page, path);
      const [res] = await Promise.all([page.waitForNavigation(), page.click('#bulk-accept')]);
      assert.equal(res.status(), 200);
      assert.equal(new URL(page.url()).pathname, '/');
      assert.equal(await page.textContent('#bulk-heading'), '2 decided, 1 refused');
      // One line per pick (in the page's order); the refused one is the gate that needs an answer.
      const lines = await page.$$eval('#bulk-results li', (lis) => lis.map((li) => [li.dataset.decided, li.textContent]));
      assert.equal(lines.length, 3);
      assert.deepEqual(lines.filter(([d]) => d === 'false').map(([, t]) => /Explain the refund/.test(t)), [true]);
      // The refused one stays, saying why.
      const row = page.locator(`#inbox tbody tr:has(a[href="${why}"]) [data-refused]`);
      assert.match(await row.textContent(), /needs an answer/);
      assert.equal(await interruptStatus(a), 'resolved');
      assert.equal(await interruptStatus(b), 'resolved');
      assert.equal(await interruptStatus(why), 'pending');
      if (js) assert.deepEqual(await axe(page), []); // axe needs scripts
      // Shown once: a reload shows the inbox alone.
      await page.reload();
      assert.equal(await page.locator('#bulk-results').count(), 0);
    } finally {
      await ctx.close();
    }
    await decideAs(why, { action: 'reject', comment: 'done' });
  });
}

test('a bulk post with no pick is refused with 400 naming the field', async () => {
  const path = await startRun('inbox-laptops', 'none picked');
  const { ctx, page } = await personPage('ada', { javaScriptEnabled: false });
  try {
    const [res] = await Promise.all([page.waitForNavigation(), page.click('#bulk-reject')]);
    assert.equal(res.status(), 400);
    assert.match(await page.textContent('#bulk-error'), /pick/);
    assert.equal(await interruptStatus(path), 'pending');
  } finally {
    await ctx.close();
  }
  await decideAs(path, { action: 'reject' });
});

test('a cross-site post to /inbox/decide is refused with 403', async () => {
  const path = await startRun('inbox-laptops', 'cross-site');
  const { ctx, page } = await personPage('ada');
  try {
    const value = await page.getAttribute(`#inbox tbody tr:has(a[href="${path}"]) input[name="pick"]`, 'value');
    const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const post = (site) => fetch(server.url + '/inbox/decide', {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site },
      body: new URLSearchParams({ action: 'accept', pick: value }),
    });
    assert.equal((await post('cross-site')).status, 403);
    assert.equal(await interruptStatus(path), 'pending');
    // The same post from the console's own page is taken.
    assert.equal((await post('same-origin')).status, 303);
    assert.equal(await interruptStatus(path), 'resolved');
  } finally {
    await ctx.close();
  }
});
