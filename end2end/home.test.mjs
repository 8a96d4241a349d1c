// The inbox at `/`: server-rendered, hydrates, and its Refresh reaches SQLite through a server function.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer, launchBrowser, api, waitForHydration, PEOPLE, signIn, ROOT } from './support.mjs';

let server;
let browser;

before(async () => {
  server = await startServer(PEOPLE, { workflowDirs: [join(ROOT, 'demo/workflows')] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('visitors who are not signed in get the sign-in page', async () => {
  const res = await fetch(server.url + '/', { redirect: 'manual' });
  assert.equal(res.status, 303);
  assert.match(res.headers.get('location'), /^\/signin\?next=/);
  const html = await (await fetch(server.url + '/signin')).text();
  assert.match(html, /<h1[^>]*>Sign in<\/h1>/);
});

test('the inbox is rendered on the server, hydrates, and refreshes through a server function', async () => {
  const ctx = await launchBrowser();
  const page = await ctx.newPage();
  await signIn(page, server.url, 'ada');
  await waitForHydration(page);
  assert.match(await page.textContent('#inbox-count'), /^0 waiting/);
  // A run created behind the page's back shows up only through the server function.
  const created = await api(server.url, 'POST', '/runs', {
    workflowId: 'expense-approval',
    inputs: { amount: 12, currency: 'EUR', purpose: 'Pens', submittedBy: 'x@example.com' },
  });
  assert.equal(created.status, 201);
  await page.click('#refresh-inbox');
  await page.waitForFunction(() => /^1 waiting/.test(document.querySelector('#inbox-count')?.textContent ?? ''));
  assert.equal(await page.textContent('#inbox tbody tr td:last-child'), '0 of 2');
  await ctx.close();
});

test('healthz answers', async () => {
  const res = await fetch(server.url + '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok' });
});
