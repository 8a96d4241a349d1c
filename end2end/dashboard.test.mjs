// The admin dashboard end to end: only admins get in; the overview counts
// and charts what is pending; runs filter by status and open a timeline with
// the audit of who decided via which ref; people are added and edited (with
// a clear error naming a bad field) and join groups; an API key is shown once,
// works, and stops working when revoked; token signing keys are
// not managed here; the outbox lists the mail sent. Then axe on each page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe } from './support.mjs';

// ada administers; grace is an approver in finance.
const CONFIG = PEOPLE.replace('id = "ada"\nname = "Ada Lovelace"', 'id = "ada"\nname = "Ada Lovelace"\nroles = ["admin"]\nemail = "ada@example.com"')
  .replace('id = "grace"\nname = "Grace Hopper"', 'id = "grace"\nname = "Grace Hopper"\nemail = "grace@example.com"');
const GRACE_KEY = 'e2e-grace-key-0123456789';

const WORKFLOW = {
  id: 'e2e-dash',
  name: 'E2E dashboard',
  version: '1.0',
  nodes: [{
    id: 'review',
    typeId: 'core.approvalGate',
    name: 'Review',
    config: { title: 'Approve the dashboard test', actions: ['accept', 'reject'], approverGroupRefs: ['finance'], timeoutMs: 3600000 },
  }],
  edges: [],
};

let server;
let browser;
let decidedRun;
let openRun;

before(async () => {
  server = await startServer(CONFIG);
  assert.ok([200, 201].includes((await api(server.url, 'PUT', '/workflows/e2e-dash', WORKFLOW)).status));
  openRun = (await api(server.url, 'POST', '/runs', { workflowId: 'e2e-dash' })).body.runId;
  decidedRun = (await api(server.url, 'POST', '/runs', { workflowId: 'e2e-dash' })).body.runId;
  const res = await fetch(`${server.url}/runs/${encodeURIComponent(decidedRun)}/interrupts/review`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GRACE_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resumeValue: { action: 'accept' } }),
  });
  assert.equal(res.status, 200, await res.text());
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function adminPage() {
  const page = await browser.newPage();
  await signIn(page, server.url, 'ada');
  return page;
}

test('people without the admin role are refused; admins see the link', async () => {
  const ctx = await launchBrowser();
  try {
    const page = await ctx.newPage();
    await signIn(page, server.url, 'grace');
    assert.equal(await page.locator('#nav-dashboard').count(), 0);
    const res = await page.goto(server.url + '/dashboard');
    assert.equal(res.status(), 403);
    assert.match(await page.textContent('main'), /admin/);
  } finally {
    await ctx.close();
  }
  // Not signed in: sent to sign in.
  const anon = await fetch(server.url + '/dashboard', { headers: { accept: 'text/html' }, redirect: 'manual' });
  assert.equal(anon.status, 303);
  assert.match(anon.headers.get('location'), /^\/signin\?next=/);
  const page = await adminPage();
  await page.click('#nav-dashboard');
  await page.waitForSelector('#stat-pending');
  await page.close();
});

test('overview counts pending interrupts and draws both charts', async () => {
  const page = await adminPage();
  await page.goto(server.url + '/dashboard');
  assert.equal((await page.textContent('#stat-pending')).trim(), '1');
  assert.equal((await page.textContent('#stat-overdue')).trim(), '0');
  // The open run's gate is in the first age bucket, and listed.
  assert.equal(await page.getAttribute('#chart-age g[data-bucket="< 1 h"]', 'data-count'), '1');
  assert.equal(await page.locator('#chart-age rect').count(), 5);
  const days = page.locator('#chart-decisions g[data-day]');
  assert.equal(await days.count(), 14);
  assert.equal(await days.last().getAttribute('data-count'), '1');
  assert.equal(await page.locator(`#pending tr[data-run="${openRun}"]`).count(), 1);
  assert.deepEqual(await axe(page), []);
  await page.close();
});

test('runs filter by status and open a timeline with the audit', async () => {
  const page = await adminPage();
  await page.goto(server.url + '/dashboard/runs');
  assert.equal(await page.locator('#runs tbody tr').count(), 2);
  await page.selectOption('#runs-status', 'completed');
  await Promise.all([page.waitForURL(/status=completed/), page.click('#runs-apply')]);
  await page.waitForSelector(`#runs tr[data-run="${decidedRun}"]`);
  assert.equal(await page.locator('#runs tbody tr').count(), 1);
  assert.deepEqual(await axe(page), []);
  await page.click(`#runs tr[data-run="${decidedRun}"] a`);
  await page.waitForSelector('#audit');
  const audit = page.locator('#audit tr[data-principal="grace"]');
  assert.match(await audit.textContent(), /accept/);
  assert.match(await audit.textContent(), /finance/);
  const types = await page.locator('#timeline li').evaluateAll((els) => els.map((e) => e.dataset.type));
  assert.ok(types.includes('interrupt.requested') && types.includes('interrupt.resolved'), types.join(','));
  assert.deepEqual(await axe(page), []);
  await page.close();
});

test('people: add, a bad field named, edit, join a group, set a password', async () => {
  const page = await adminPage();
  await page.goto(server.url + '/dashboard/people');
  await page.fill('#person-id', 'hedy');
  await page.fill('#person-name', 'Hedy Lamarr');
  await page.fill('#person-email', 'not-an-address');
  await Promise.all([page.waitForNavigation(), page.click('#person-save')]);
  assert.equal(await page.getAttribute('#flash', 'data-ok'), 'false');
  assert.match(await page.textContent('#flash'), /email/);
  assert.equal(await page.locator('tr[data-person="hedy"]').count(), 0, 'nothing written');

  await page.fill('#person-id', 'hedy');
  await page.fill('#person-name', 'Hedy Lamarr');
  await page.fill('#person-email', 'hedy@example.com');
  await page.fill('#person-groups', 'ops');
  await Promise.all([page.waitForNavigation(), page.click('#person-save')]);
  assert.equal(await page.getAttribute('#flash', 'data-ok'), 'true');
  assert.equal((await page.textContent('tr[data-person="hedy"] td[data-groups]')).trim(), 'ops');

  // The message is shown once.
  await page.reload();
  assert.equal(await page.locator('#flash').count(), 0);

  await page.click('a[aria-label="Edit hedy"]');
  await page.waitForSelector('#person-form-heading:has-text("Edit hedy")');
  await page.fill('#person-roles', 'buyer');
  await Promise.all([page.waitForNavigation(), page.click('#person-save')]);
  assert.equal((await page.textContent('tr[data-person="hedy"] td[data-roles]')).trim(), 'buyer');

  await page.selectOption('#group-add-principal', 'hedy');
  await page.fill('#group-add-name', 'finance');
  await Promise.all([page.waitForNavigation(), page.click('#group-add-submit')]);
  assert.match(await page.textContent('#groups li[data-membership="finance"]'), /hedy/);

  await page.selectOption('#password-person', 'hedy');
  await page.fill('#password-new', 'hedy-long-password');
  await Promise.all([page.waitForNavigation(), page.click('#password-save')]);
  assert.match(await page.textContent('tr[data-person="hedy"]'), /password set/);
  assert.deepEqual(await axe(page), []);
  await page.close();

  // Hedy signs in and, in finance now, sees the open gate.
  const ctx = await launchBrowser();
  try {
    const hedy = await ctx.newPage();
    await hedy.goto(server.url + '/signin');
    await hedy.fill('#signin-user', 'hedy');
    await hedy.fill('#signin-password', 'hedy-long-password');
    await Promise.all([hedy.waitForNavigation(), hedy.click('#signin-submit')]);
    await hedy.waitForSelector(`#inbox tr[data-run="${openRun}"]`);
  } finally {
    await ctx.close();
  }
});

test('API keys: shown once, work, revoked', async () => {
  const page = await adminPage();
  await page.goto(server.url + '/dashboard/keys');
  await page.selectOption('#key-principal', 'grace');
  await page.fill('#key-label', 'e2e reader');
  await page.check('#scope-runs-read');
  await Promise.all([page.waitForNavigation(), page.click('#key-create')]);
  const key = (await page.textContent('#new-secret')).trim();
  assert.match(key, /^tg_/);
  const read = () => fetch(`${server.url}/runs/${encodeURIComponent(openRun)}`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal((await read()).status, 200);

  await page.reload();
  assert.equal(await page.locator('#new-secret').count(), 0, 'never shown again');
  const row = page.locator('#api-keys tr', { hasText: 'e2e reader' });
  await Promise.all([page.waitForNavigation(), row.locator('button', { hasText: 'Revoke' }).click()]);
  // A confirmation step names the key; its own button revokes (end2end/confirm.test.mjs).
  await Promise.all([page.waitForNavigation(), page.click('#confirm-revoke-submit')]);
  assert.equal(await page.getAttribute('#flash', 'data-ok'), 'true');
  assert.equal(await page.locator('#api-keys tr', { hasText: 'e2e reader' }).getAttribute('data-revoked'), 'true');
  assert.equal((await read()).status, 401);

  // No scope chosen: refused, naming the field.
  await page.selectOption('#key-principal', 'grace');
  await Promise.all([page.waitForNavigation(), page.click('#key-create')]);
  assert.match(await page.textContent('#flash'), /scope/);
  assert.deepEqual(await axe(page), []);
  await page.close();
});

test('token signing keys are not managed in the dashboard', async () => {
  const page = await adminPage();
  await page.goto(server.url + '/dashboard/keys');
  assert.equal(await page.locator('#token-keys, #token-key-form').count(), 0);
  assert.match(await page.textContent('#token-keys-note'), /tollgate token-key/);
  // The old form posts are gone.
  const cookies = await page.context().cookies();
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  for (const path of ['/dashboard/token-keys', '/dashboard/token-keys/activate', '/dashboard/token-keys/retire']) {
    const res = await fetch(server.url + path, {
      method: 'POST', redirect: 'manual',
      headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'kid=e2e-2&secret=typed-by-a-tenant-admin-0123456789&activate=1',
    });
    assert.ok([404, 405].includes(res.status), `${path}: ${res.status}`);
  }
  await page.close();
});

test('the outbox lists the mail sent for the gates', async () => {
  const page = await adminPage();
  // Without [smtp] mail lands in the dev outbox; wait for the worker.
  for (let i = 0; i < 50; i += 1) {
    await page.goto(server.url + '/dashboard/outbox?status=sent');
    if (await page.locator('#outbox tr[data-status="sent"]').count() >= 2) break;
    await page.waitForTimeout(200);
  }
  assert.ok(await page.locator('#outbox tr[data-status="sent"]').count() >= 2);
  assert.match(await page.textContent('#outbox'), /grace@example\.com/);
  await page.selectOption('#outbox-kind', 'callback');
  await Promise.all([page.waitForURL(/kind=callback/), page.click('#outbox-apply')]);
  await page.waitForSelector('#outbox-empty');
  assert.deepEqual(await axe(page), []);
  await page.close();
});
