// Times for people: every moment on the inbox, a request and the dashboard
// is said relative and absolute ("Due in 5 days — Tue 8 Dec, 18:41 UTC")
// inside <time datetime title> holding the exact instant. Without
// JavaScript the server's UTC (named) stays; with JavaScript the browser's
// own zone is used. Then axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe, waitForHydration } from './support.mjs';

const CONFIG = PEOPLE.replace('id = "ada"\nname = "Ada Lovelace"', 'id = "ada"\nname = "Ada Lovelace"\nroles = ["admin"]');
const SIX_DAYS = 6 * 24 * 3600 * 1000;
const WORKFLOW = {
  id: 'e2e-times',
  name: 'E2E times',
  version: '1.0',
  nodes: [{
    id: 'review',
    typeId: 'core.approvalGate',
    name: 'Review',
    config: { title: 'Approve before the deadline', actions: ['accept', 'reject'], approverGroupRefs: ['finance'], timeoutMs: SIX_DAYS },
  }],
  edges: [],
};

let server;
let runId;
let path;

before(async () => {
  server = await startServer(CONFIG);
  assert.ok([200, 201].includes((await api(server.url, 'PUT', '/workflows/e2e-times', WORKFLOW)).status));
  runId = (await api(server.url, 'POST', '/runs', { workflowId: 'e2e-times' })).body.runId;
  path = `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}/interrupts/review`;
  for (let i = 0; i < 100; i++) {
    const got = await api(server.url, 'GET', path);
    if (got.status === 200 && got.body.status === 'pending') break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
});

after(async () => {
  await server?.stop();
});

/** Each <time> under `selector`: its attributes and text. */
async function times(page, selector) {
  return page.$$eval(`${selector} time`, (ts) => ts.map((t) => ({
    datetime: t.getAttribute('datetime'),
    title: t.getAttribute('title'),
    text: t.textContent.trim(),
  })));
}

/** "HH:MM" of an instant in a zone, as the browser's Intl says it. */
function clock(iso, timeZone) {
  return new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso));
}

const DAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';

test('without JavaScript: relative and absolute in UTC, the exact instant in datetime and title', async () => {
  const ctx = await launchBrowser({ javaScriptEnabled: false, timezoneId: 'Asia/Tokyo' });
  try {
    const page = await ctx.newPage();
    await signIn(page, server.url, 'grace');
    const row = `#inbox tr[data-run="${runId}"]`;
    const [raised, deadline] = await times(page, row);
    for (const t of [raised, deadline]) {
      assert.equal(t.title, t.datetime);
      assert.ok(!Number.isNaN(Date.parse(t.datetime)), t.datetime);
    }
    assert.match(raised.text, new RegExp(`^(Now|\\d+ minutes? ago) — ${DAY}, \\d\\d:\\d\\d UTC$`), raised.text);
    assert.match(deadline.text, new RegExp(`^Due in (5|6) days — ${DAY}, \\d\\d:\\d\\d UTC$`), deadline.text);
    assert.ok(deadline.text.endsWith(`${clock(deadline.datetime, 'UTC')} UTC`), deadline.text);

    await page.goto(server.url + path);
    const [due] = await times(page, '#deadline');
    assert.equal(due.datetime, deadline.datetime);
    assert.match(due.text, /^Due in (5|6) days — .* UTC$/);
    // axe runs in the JavaScript test: it cannot be evaluated with scripts off.
  } finally {
    await ctx.close();
  }
});

test("with JavaScript: the browser's time zone, on the inbox, the request and the dashboard", async () => {
  const ctx = await launchBrowser({ timezoneId: 'Asia/Tokyo' });
  try {
    const page = await ctx.newPage();
    await signIn(page, server.url, 'ada');
    await waitForHydration(page);
    const row = `#inbox tr[data-run="${runId}"]`;
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes('JST'), `${row} time[data-deadline]`);
    const [raised, deadline] = await times(page, row);
    assert.match(deadline.text, new RegExp(`^Due in (5|6) days — ${DAY}, \\d\\d:\\d\\d JST$`), deadline.text);
    assert.ok(deadline.text.endsWith(`${clock(deadline.datetime, 'Asia/Tokyo')} JST`), deadline.text);
    assert.match(raised.text, /JST$/);
    assert.equal(deadline.title, deadline.datetime);

    await page.goto(server.url + path);
    await waitForHydration(page);
    await page.waitForFunction(() => document.querySelector('#deadline time')?.textContent.endsWith('JST'));

    await page.goto(server.url + '/dashboard');
    await waitForHydration(page);
    await page.waitForFunction(() => [...document.querySelectorAll('main time')].some((t) => t.textContent.endsWith('JST')));
    const all = await times(page, 'main');
    assert.ok(all.length > 0);
    for (const t of all) {
      assert.equal(t.title, t.datetime);
      assert.match(t.text, / — .* JST$/, t.text);
    }
    assert.deepEqual(await axe(page), []);
  } finally {
    await ctx.close();
  }
});
