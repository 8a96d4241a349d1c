// Delegation (issue #16 point 5), with and without JavaScript: Ada hands her
// decisions to Linus on /me/delegations; Linus sees them under "Decisions
// handed to you", decides one in Ada's place (the page says so, the vote is
// recorded as Ada's seat cast by Linus), ends the delegation, and is refused
// again. An admin reassigns one seat from the run's dashboard page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe, waitForHydration, startGateRun, runSegment } from './support.mjs';

let server;

// Ada is also an admin (the reassignment test uses the dashboard).
const CONFIG = PEOPLE.replace('id = "ada"\nname = "Ada Lovelace"', 'id = "ada"\nname = "Ada Lovelace"\nroles = ["admin"]');

const WORKFLOW = {
  id: 'deleg-buy',
  name: 'E2E delegation',
  version: '1.0',
  nodes: [
    {
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      config: { title: 'Buy a projector', actions: ['accept', 'reject'], approverGroupRefs: ['finance'] },
    },
  ],
  edges: [],
};

const startRun = () => startGateRun(server.url, WORKFLOW.id);

async function personPage(user, js) {
  const ctx = await launchBrowser({ javaScriptEnabled: js });
  const page = await ctx.newPage();
  await signIn(page, server.url, user);
  if (js) await waitForHydration(page);
  return { ctx, page };
}

async function submit(page, button) {
  const [res] = await Promise.all([page.waitForNavigation(), page.click(button)]);
  return res;
}

function inDays(n) {
  return new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
}

before(async () => {
  server = await startServer(CONFIG);
  const res = await api(server.url, 'PUT', `/workflows/${WORKFLOW.id}`, WORKFLOW);
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
});

after(async () => {
  await server?.stop();
});

for (const js of [false, true]) {
  test(`a delegate decides in the delegator's place, then is refused once it ends (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const { runId, path } = await startRun();
    // Ada hands her decisions to Linus for a week.
    const ada = await personPage('ada', js);
    try {
      await ada.page.goto(server.url + '/me/delegations');
      if (js) await waitForHydration(ada.page);
      await ada.page.selectOption('#delegate', 'linus');
      await ada.page.fill('#ends', inDays(7));
      await ada.page.fill('#reason', 'Conference');
      const res = await submit(ada.page, '#delegate-submit');
      assert.equal(res.status(), 200);
      assert.equal(await ada.page.getAttribute('#flash', 'data-ok'), 'true', await ada.page.textContent('#flash'));
      assert.match(await ada.page.textContent('#flash'), /Linus Pauling decides in your place/);
      assert.equal(await ada.page.locator('#delegations tr[data-state="active"]').count(), 1);
      if (js) assert.deepEqual(await axe(ada.page), []);
    } finally {
      await ada.ctx.close();
    }

    const linus = await personPage('linus', js);
    const { page } = linus;
    try {
      // His own inbox is empty of finance gates; Ada's is one click away.
      assert.equal(await page.locator(`#inbox a[href="${path}"]`).count(), 0);
      await Promise.all([page.waitForNavigation(), page.click('#for-ada')]);
      assert.match(page.url(), /[?&]for=ada/);
      // With JavaScript the router navigates in place: wait for the new page's data.
      await page.waitForSelector('#inbox-count:has-text("Ada Lovelace")');
      assert.match(await page.textContent('#inbox-count'), /waiting for Ada Lovelace/);
      if (js) {
        await waitForHydration(page);
        assert.deepEqual(await axe(page), []);
      }
      await Promise.all([page.waitForNavigation(), page.click(`#inbox a[href="${path}"]`)]);
      await page.waitForSelector('#in-place-of');
      assert.match(await page.textContent('#in-place-of'), /in Ada Lovelace's place/);
      if (js) await waitForHydration(page);
      await submit(page, '#action-accept');
      assert.equal(await page.textContent('#decided'), 'Your decision was recorded.');
      assert.match(await page.textContent('#votes'), /ada.*by linus, in ada's place/s);

      // The audit: Ada's seat, cast by Linus; the event says on whose behalf.
      const view = (await api(server.url, 'GET', path)).body;
      const vote = view.votes.find((v) => v.counted);
      assert.deepEqual([vote.principal, vote.castBy], ['ada', 'linus']);
      const events = (await api(server.url, 'GET', `/runs/${encodeURIComponent(runId)}/events/poll`)).body;
      const resolved = (events.events ?? events).find((e) => e.type === 'interrupt.resolved');
      assert.equal(resolved.payload['x-tollgate-onBehalfOf'], 'ada');

      // Linus ends it; from then on he may not decide Ada's requests.
      await page.goto(server.url + '/me/delegations');
      if (js) await waitForHydration(page);
      await submit(page, '#delegations tr[data-state="active"] button');
      assert.match(await page.textContent('#flash'), /has ended/);
      assert.equal(await page.locator('#delegations tr[data-state="revoked"]').count() >= 1, true);
      const next = await startRun();
      await page.goto(server.url + next.path);
      assert.equal(await page.locator('#not-eligible').count(), 1);
      await page.goto(server.url + '/?for=ada');
      assert.match(await page.textContent('main'), /does not hold ada's decisions/);
      // Clean up for the next variant.
      await api(server.url, 'POST', next.path, { resumeValue: { action: 'reject' } });
    } finally {
      await linus.ctx.close();
    }
  });
}

test('bad delegation forms are refused in words, and nothing is created', async () => {
  const { ctx, page } = await personPage('ada', false);
  try {
    await page.goto(server.url + '/me/delegations');
    const before = await page.locator('#delegations tbody tr').count();
    // No end day: the browser would stop it; a post without one says which field.
    await page.selectOption('#delegate', 'linus');
    await page.$eval('#ends', (e) => e.removeAttribute('required'));
    await submit(page, '#delegate-submit');
    assert.equal(await page.getAttribute('#flash', 'data-ok'), 'false');
    assert.match(await page.textContent('#flash'), /endsAt/);
    assert.equal(await page.locator('#delegations tbody tr').count(), before);
  } finally {
    await ctx.close();
  }
});

for (const js of [false, true]) {
  test(`an admin reassigns Grace's seat on one request to Linus from the dashboard (JavaScript ${js ? 'on' : 'off'})`, async () => {
    // Whatever an earlier test left: no live delegation.
    for (const d of (await api(server.url, 'GET', '/delegations?all=true')).body.items) {
      if (d.state === 'active' || d.state === 'upcoming') {
        await api(server.url, 'POST', `/delegations/${d.delegationId}/revoke`, {});
      }
    }
    const { runId, path } = await startRun();
    const other = await startRun();
    const admin = await personPage('ada', js);
    try {
      await admin.page.goto(`${server.url}/dashboard/runs/${runSegment(runId)}`);
      if (js) await waitForHydration(admin.page);
      await admin.page.selectOption('#reassign-from', 'grace');
      await admin.page.selectOption('#reassign-to', 'linus');
      await admin.page.fill('#reassign-reason', 'Grace is on leave');
      await submit(admin.page, '#reassign-submit');
      assert.equal(await admin.page.getAttribute('#flash', 'data-ok'), 'true', await admin.page.textContent('#flash'));
      assert.match(await admin.page.textContent('#flash'), /Linus Pauling now decides in Grace Hopper's place/);
      if (js) assert.deepEqual(await axe(admin.page), []);
      // A seat the gate does not give is refused in words.
      await admin.page.selectOption('#reassign-from', 'linus');
      await admin.page.selectOption('#reassign-to', 'grace');
      await submit(admin.page, '#reassign-submit');
      assert.equal(await admin.page.getAttribute('#flash', 'data-ok'), 'false');
      assert.match(await admin.page.textContent('#flash'), /from/);
    } finally {
      await admin.ctx.close();
    }
    const linus = await personPage('linus', js);
    try {
      const link = linus.page.locator(`#reassigned a[href="${path}"]`);
      assert.equal(await link.count(), 1);
      await Promise.all([linus.page.waitForNavigation(), link.click()]);
      await linus.page.waitForSelector('#in-place-of');
      assert.match(await linus.page.textContent('#in-place-of'), /in Grace Hopper's place/);
      if (js) await waitForHydration(linus.page);
      await submit(linus.page, '#action-accept');
      assert.equal(await linus.page.textContent('#decided'), 'Your decision was recorded.');
      // On another request of the same gate he has no seat.
      await linus.page.goto(server.url + other.path);
      assert.equal(await linus.page.locator('#not-eligible').count(), 1);
    } finally {
      await linus.ctx.close();
    }
    const vote = (await api(server.url, 'GET', path)).body.votes.find((v) => v.counted);
    assert.deepEqual([vote.principal, vote.castBy], ['grace', 'linus']);
    await api(server.url, 'POST', other.path, { resumeValue: { action: 'reject' } });
  });
}

test('the delegations page needs a sign-in, and a cross-site post to it changes nothing (403)', async () => {
  const ctx = await launchBrowser({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  try {
    await page.goto(server.url + '/me/delegations');
    assert.match(new URL(page.url()).pathname, /^\/signin/);
    await signIn(page, server.url, 'grace');
    const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const post = (site) => fetch(server.url + '/me/delegations', {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site },
      body: new URLSearchParams({ delegate: 'linus', ends: new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) }),
    });
    const mine = async () => (await api(server.url, 'GET', '/delegations?all=true')).body.items.filter((d) => d.delegator === 'grace' && d.state === 'active');
    const before = (await mine()).length;
    assert.equal((await post('cross-site')).status, 403);
    assert.equal((await mine()).length, before);
    // The same post from the page itself is taken.
    assert.equal((await post('same-origin')).status, 303);
    const after = await mine();
    assert.equal(after.length, before + 1);
    for (const d of after) await api(server.url, 'POST', `/delegations/${d.delegationId}/revoke`, {});
  } finally {
    await ctx.close();
  }
});
