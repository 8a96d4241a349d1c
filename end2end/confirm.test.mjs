// The dashboard's destructive actions ask first, with and without
// JavaScript: revoking an API key and cancelling a run lead to a step that
// names what will be destroyed, and only its explicit second button acts.
// A stray post without the confirmation destroys nothing. Then axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe } from './support.mjs';

const CONFIG = PEOPLE.replace('id = "ada"\nname = "Ada Lovelace"', 'id = "ada"\nname = "Ada Lovelace"\nroles = ["admin"]');
const WORKFLOW = {
  id: 'e2e-confirm',
  name: 'E2E confirm',
  version: '1.0',
  nodes: [{
    id: 'review',
    typeId: 'core.approvalGate',
    name: 'Review',
    config: { title: 'Approve the confirmation test', actions: ['accept', 'reject'], approverGroupRefs: ['finance'] },
  }],
  edges: [],
};

let server;

before(async () => {
  server = await startServer(CONFIG);
  assert.ok([200, 201].includes((await api(server.url, 'PUT', '/workflows/e2e-confirm', WORKFLOW)).status));
});

after(async () => {
  await server?.stop();
});

const runPath = (runId) => `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}`;

async function adminIn(options) {
  const ctx = await launchBrowser(options);
  const page = await ctx.newPage();
  await signIn(page, server.url, 'ada');
  return { ctx, page };
}

async function click(page, selector) {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

/** Creates a key for grace through the dashboard; resolves to { id, key }. */
async function createKey(page, label) {
  await page.goto(server.url + '/dashboard/keys');
  await page.selectOption('#key-principal', 'grace');
  await page.fill('#key-label', label);
  await page.check('#scope-runs-read');
  await click(page, '#key-create');
  const key = (await page.textContent('#new-secret')).trim();
  const id = await page.locator('#api-keys tr', { hasText: label }).getAttribute('data-key');
  return { id, key };
}

const works = async (key) => (await fetch(`${server.url}/workflows`, { headers: { authorization: `Bearer ${key}` } })).status !== 401;

for (const js of [true, false]) {
  const how = js ? 'with JavaScript' : 'without JavaScript';

  test(`revoking an API key asks first and names the key (${how})`, async () => {
    const { ctx, page } = await adminIn({ javaScriptEnabled: js });
    try {
      const label = `confirm ${js ? 'js' : 'plain'}`;
      const { id, key } = await createKey(page, label);
      assert.ok(await works(key));

      // Step one changes nothing: it shows what will be revoked.
      await click(page, `#api-keys tr[data-key="${id}"] button`);
      assert.match(page.url(), /\/dashboard\/keys\?revoke=/);
      const panel = await page.textContent('#confirm-revoke');
      assert.ok(panel.includes(label) && panel.includes(id) && panel.includes('grace'), panel);
      assert.ok(await works(key), 'not revoked by the first step');
      if (js) assert.deepEqual(await axe(page), []); // axe needs scripts

      // "Keep the key" goes back; still nothing revoked.
      await click(page, '#confirm-revoke-keep');
      assert.equal(await page.locator('#confirm-revoke').count(), 0);
      assert.equal(await page.getAttribute(`#api-keys tr[data-key="${id}"]`, 'data-revoked'), 'false');

      // The second, explicit button revokes.
      await page.goto(`${server.url}/dashboard/keys?revoke=${encodeURIComponent(id)}`);
      await click(page, '#confirm-revoke-submit');
      assert.equal(await page.getAttribute('#flash', 'data-ok'), 'true');
      assert.equal(await page.getAttribute(`#api-keys tr[data-key="${id}"]`, 'data-revoked'), 'true');
      assert.equal(await works(key), false);
    } finally {
      await ctx.close();
    }
  });

  test(`cancelling a run asks first and names the run (${how})`, async () => {
    const { ctx, page } = await adminIn({ javaScriptEnabled: js });
    try {
      const runId = (await api(server.url, 'POST', '/runs', { workflowId: 'e2e-confirm' })).body.runId;
      const timeline = `/dashboard/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}`;
      await page.goto(server.url + timeline);
      await click(page, '#run-cancel');
      const panel = await page.textContent('#confirm-cancel');
      assert.ok(panel.includes(runId) && panel.includes('e2e-confirm'), panel);
      assert.notEqual((await api(server.url, 'GET', runPath(runId))).body.status, 'cancelled');
      if (js) assert.deepEqual(await axe(page), []); // axe needs scripts

      await page.fill('#cancel-reason', 'duplicate request');
      await click(page, '#confirm-cancel-submit');
      assert.equal(await page.getAttribute('#flash', 'data-ok'), 'true', await page.textContent('#flash'));
      assert.equal((await api(server.url, 'GET', runPath(runId))).body.status, 'cancelled');
      assert.equal(await page.locator('#run-cancel').count(), 0, 'a cancelled run offers no cancel');
    } finally {
      await ctx.close();
    }
  });
}

test('a post without the confirmation destroys nothing and leads to the confirmation step', async () => {
  const { ctx, page } = await adminIn();
  try {
    const { id, key } = await createKey(page, 'stray post');
    const runId = (await api(server.url, 'POST', '/runs', { workflowId: 'e2e-confirm' })).body.runId;
    // A same-origin form post, as a stray click or a replayed request would send it.
    const post = (action, fields) => page.evaluate(([action, fields]) => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = action;
      for (const [name, value] of Object.entries(fields)) {
        const input = document.createElement('input');
        input.type = 'hidden';
        input.name = name;
        input.value = value;
        form.appendChild(input);
      }
      document.body.appendChild(form);
      form.submit();
    }, [action, fields]);

    await Promise.all([page.waitForNavigation(), post('/dashboard/keys/revoke', { id })]);
    assert.equal(await page.getAttribute('#flash', 'data-ok'), 'false');
    assert.ok(await page.locator('#confirm-revoke-submit').count() === 1, 'the confirmation step is shown');
    assert.ok(await works(key), 'the key still works');

    await Promise.all([page.waitForNavigation(), post('/dashboard/runs/cancel', { run: runId, confirm: 'yes' })]);
    assert.equal(await page.getAttribute('#flash', 'data-ok'), 'false');
    assert.equal(await page.locator('#confirm-cancel-submit').count(), 1);
    assert.notEqual((await api(server.url, 'GET', runPath(runId))).body.status, 'cancelled');
  } finally {
    await ctx.close();
  }
});
