// The console shell: server-rendered, hydrates, and reaches SQLite through a server function.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, waitForHydration } from './support.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('the home page is rendered on the server', async () => {
  const res = await fetch(server.url + '/');
  assert.equal(res.status, 200);
  const html = await res.text();
  assert.match(html, /<h1[^>]*>Tollgate<\/h1>/);
  // The overview was read from the database while rendering.
  assert.match(html, /id="overview-workflows"[^>]*>\s*8\s*</);
});

test('the page hydrates and the server function reads fresh data', async () => {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  await waitForHydration(page);
  assert.equal(await page.textContent('#overview-runs'), '0');
  // A run created behind the page's back shows up only through the server function.
  const created = await api(server.url, 'POST', '/runs', { workflowId: 'conformance-approval' });
  assert.equal(created.status, 201);
  await page.click('#refresh-overview');
  await page.waitForFunction(() => document.querySelector('#overview-runs')?.textContent === '1');
  assert.equal(await page.textContent('#overview-pending'), '1');
  assert.equal(await page.textContent('#refresh-count'), 'Refreshed 1 times');
  await page.close();
});

test('healthz answers', async () => {
  const res = await fetch(server.url + '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok' });
});
