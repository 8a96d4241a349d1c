// The approver console end to end: sign-in, the inbox per person (eligibility
// from group and role refs), deciding through the interrupt page's form, a
// server validation error beside its field, quorum across two people, the
// token page (open, used, expired, invalid), the same with JavaScript off, and
// axe-core on the inbox, the interrupt page and the token page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { startServer, launchBrowser, api, PEOPLE, PASSWORDS, signIn, axe, startGateRun } from './support.mjs';

// linus is a buyer by role (the procurement gate names the role, not his group).
const CONFIG = PEOPLE.replace('groups = ["procurement"]', 'groups = ["procurement"]\nroles = ["buyer"]');
const GRACE_KEY = 'e2e-grace-key-0123456789';
const TOKEN_KID = 'e2e-1';
const TOKEN_SECRET = 'e2e-token-secret-0123456789-0123456789';

let server;

/** A workflow with one approval gate; `gate` adds to or overrides its config. */
function gateWorkflow(id, gate) {
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
          title: `Approve ${id}`,
          description: 'An end-to-end test request.',
          actions: ['accept', 'reject'],
          requestSchema: {
            type: 'object',
            required: ['purpose'],
            properties: { purpose: { type: 'string', title: 'Purpose' } },
          },
          resumeSchema: {
            type: 'object',
            required: ['action'],
            properties: {
              action: { type: 'string', enum: ['accept', 'reject'] },
              comment: { type: 'string', title: 'Comment', minLength: 3, maxLength: 10 },
            },
          },
          ...gate,
        },
        inputs: { purpose: { type: 'variable', variableName: 'purpose' } },
      },
      { id: 'done', typeId: 'core.noop', name: 'Done', config: {} },
    ],
    edges: [{ id: 'next', sourceNodeId: 'review', targetNodeId: 'done', triggerRule: 'all_success' }],
  };
}

const WORKFLOWS = [
  // ada and grace (group finance); two must agree.
  gateWorkflow('e2e-finance', { approverGroupRefs: ['finance'], requiredApprovals: 2 }),
  // ada and grace (group finance); one decides.
  gateWorkflow('e2e-single', { approverGroupRefs: ['finance'] }),
  // linus only, through his role.
  gateWorkflow('e2e-procure', { approverRoleRefs: ['buyer'] }),
];

/** Starts a run; resolves to { runId, path } of its pending gate. */
const startRun = (workflowId, purpose) => startGateRun(server.url, workflowId, { purpose });

async function runStatus(path) {
  const runPath = path.replace(/\/interrupts\/review$/, '');
  return (await api(server.url, 'GET', runPath)).body.status;
}

/** A fresh browser (own cookies), signed in as `user` unless null. */
async function personPage(user, options = {}) {
  const ctx = await launchBrowser(options);
  const page = await ctx.newPage();
  if (user) await signIn(page, server.url, user);
  return { ctx, page };
}

async function rowsOf(page) {
  return page.$$eval('#inbox tbody tr', (trs) => trs.map((tr) => ({
    run: tr.dataset.run,
    node: tr.dataset.node,
    title: tr.querySelector('td a')?.textContent,
    href: tr.querySelector('td a')?.getAttribute('href'),
    quorum: tr.querySelector('[data-quorum]')?.textContent,
  })));
}

/** Submits the decide form by clicking `button` and waits for the page that follows. */
async function submit(page, button) {
  const [res] = await Promise.all([page.waitForNavigation(), page.click(button)]);
  return res;
}

/** A base64url claims payload signed with the e2e token key, as the engine signs. */
function sign(claims) {
  const p = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const mac = createHmac('sha256', TOKEN_SECRET).update(`hs256.${TOKEN_KID}.${p}`).digest('base64url');
  return `ow2.hs256.${TOKEN_KID}.${p}.${mac}`;
}

/**
 * A resolve link for grace: the `token` of GET /runs/{id}/interrupts/{node}
 * with her API key when the server gives one; otherwise (the REST inspect
 * does not mint links yet) signed here with the configured e2e key.
 */
async function mintToken(path) {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${GRACE_KEY}` } });
  assert.equal(res.status, 200);
  const body = await res.json();
  if (body.token) return body.token;
  return sign({
    i: body.interruptId, r: body.runId, n: body.nodeId, p: 'grace', t: 'resolve',
    a: Date.now(), e: Date.now() + 30 * 60_000, j: randomBytes(16).toString('hex'),
  });
}

/** The same token's claims with a past expiry, signed again with the e2e key. */
function expiredCopy(token) {
  const [, , kid, payload] = token.split('.');
  assert.equal(kid, TOKEN_KID);
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  // Issued before it expired (a token's lifetime is checked too).
  return sign({ ...claims, a: Date.now() - 120_000, e: Date.now() - 60_000 });
}

before(async () => {
  server = await startServer(CONFIG);
  for (const wf of WORKFLOWS) {
    const res = await api(server.url, 'PUT', `/workflows/${wf.id}`, wf);
    assert.ok(res.status === 201 || res.status === 200, `${wf.id}: ${JSON.stringify(res.body)}`);
  }
});

after(async () => {
  await server?.stop();
});

test('sign-in: a wrong password is refused with a message, the right one opens the inbox', async () => {
  const { ctx, page } = await personPage(null);
  await page.goto(server.url + '/');
  assert.match(page.url(), /\/signin\?next=/);
  await page.fill('#signin-user', 'ada');
  await page.fill('#signin-password', 'not-her-password');
  await submit(page, '#signin-submit');
  assert.match(page.url(), /\/signin\?error=1/);
  assert.equal(await page.textContent('#signin-error'), 'That name and password do not match.');
  // Still not signed in.
  await page.goto(server.url + '/');
  assert.match(page.url(), /\/signin/);

  await page.fill('#signin-user', 'ada');
  await page.fill('#signin-password', PASSWORDS.ada);
  await submit(page, '#signin-submit');
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(await page.textContent('#signed-in-as'), 'Ada Lovelace');
  assert.equal(await page.textContent('h1'), 'Inbox');

  // Signing out ends the session.
  await submit(page, '#sign-out');
  assert.match(page.url(), /\/signin\?signed_out=1/);
  await page.goto(server.url + '/');
  assert.match(page.url(), /\/signin\?next=/);
  await ctx.close();
});

test('the inbox lists what each person may decide (group and role refs)', async () => {
  const fin = await startRun('e2e-finance', 'Inbox finance');
  const proc = await startRun('e2e-procure', 'Inbox procure');
  const ada = await personPage('ada');
  const linus = await personPage('linus');
  const adaRows = await rowsOf(ada.page);
  const linusRows = await rowsOf(linus.page);
  assert.ok(adaRows.some((r) => r.run === fin.runId && r.title === 'Approve e2e-finance' && r.quorum === '0 of 2'),
    JSON.stringify(adaRows));
  assert.ok(!adaRows.some((r) => r.run === proc.runId), 'ada is not a buyer');
  assert.ok(linusRows.some((r) => r.run === proc.runId && r.title === 'Approve e2e-procure'), JSON.stringify(linusRows));
  assert.ok(!linusRows.some((r) => r.run === fin.runId), 'linus is not in finance');
  // The link in the row opens the interrupt page.
  const row = adaRows.find((r) => r.run === fin.runId);
  assert.equal(row.href, fin.path);
  // The workflow filter narrows the list.
  await ada.page.goto(server.url + '/?workflow=e2e-procure');
  assert.deepEqual(await rowsOf(ada.page), []);
  // A person who may not decide is told so on the page itself.
  await linus.page.goto(server.url + fin.path);
  assert.ok(await linus.page.$('#not-eligible'));
  assert.equal(await linus.page.$('#decide-form'), null);
  await ada.ctx.close();
  await linus.ctx.close();
});

test('deciding an approval through the form records the vote', async () => {
  const run = await startRun('e2e-single', 'Decide by form');
  const { ctx, page } = await personPage('ada');
  await page.goto(server.url + run.path);
  assert.equal(await page.textContent('#interrupt-title'), 'Approve e2e-single');
  assert.match(await page.textContent('main'), /Decide by form/);
  await page.fill('#answer-comment', 'Fine');
  await submit(page, '#action-accept');
  assert.match(page.url(), /\?decided=1$/);
  assert.equal(await page.textContent('#decided'), 'Your decision was recorded.');
  assert.match(await page.textContent('#closed'), /This request is (resolved|accepted|approved)/);
  assert.match(await page.textContent('#votes'), /ada — accept/);
  assert.equal(await runStatus(run.path), 'completed');
  // Gone from the inbox.
  await page.goto(server.url + '/');
  assert.ok(!(await rowsOf(page)).some((r) => r.run === run.runId));
  await ctx.close();
});

test('a server validation error is shown beside its field and the input is kept', async () => {
  const run = await startRun('e2e-single', 'Too long');
  const { ctx, page } = await personPage('ada');
  await page.goto(server.url + run.path);
  // maxLength is also a browser hint (it stops typing); minLength is only checked by the server (the form is novalidate).
  assert.equal(await page.getAttribute('#answer-comment', 'maxlength'), '10');
  await page.fill('#answer-comment', 'ab');
  const res = await submit(page, '#action-accept');
  assert.equal(res.status(), 400);
  assert.equal(await page.inputValue('#answer-comment'), 'ab');
  assert.equal(await page.getAttribute('#answer-comment', 'aria-invalid'), 'true');
  const describedBy = await page.getAttribute('#answer-comment', 'aria-describedby');
  assert.match(describedBy, /answer-comment-error/);
  assert.match(await page.textContent('#answer-comment-error'), /3/);
  assert.ok(await page.$('#form-message'));
  // Nothing was recorded; correcting the field then works.
  assert.equal((await api(server.url, 'GET', run.path)).body.status, 'pending');
  await page.fill('#answer-comment', 'Short');
  await submit(page, '#action-accept');
  assert.match(page.url(), /\?decided=1$/);
  assert.equal(await runStatus(run.path), 'completed');
  await ctx.close();
});

test('quorum progress across two people', async () => {
  const run = await startRun('e2e-finance', 'Two must agree');
  const ada = await personPage('ada');
  const grace = await personPage('grace');
  await ada.page.goto(server.url + run.path);
  assert.equal(await ada.page.textContent('#quorum'), '0 of 2 approvals');
  await submit(ada.page, '#action-accept');
  assert.match(ada.page.url(), /\?decided=1$/);
  assert.equal(await ada.page.textContent('#quorum'), '1 of 2 approvals');
  assert.equal(await runStatus(run.path), 'waiting-approval');

  // Grace sees ada's vote and the progress, in the inbox and on the page.
  await grace.page.goto(server.url + '/');
  const row = (await rowsOf(grace.page)).find((r) => r.run === run.runId);
  assert.equal(row?.quorum, '1 of 2');
  await grace.page.goto(server.url + run.path);
  assert.equal(await grace.page.textContent('#quorum'), '1 of 2 approvals');
  assert.match(await grace.page.textContent('#votes'), /ada — accept/);
  assert.match(await grace.page.textContent('#still-to-vote'), /Grace Hopper/);
  await submit(grace.page, '#action-accept');
  assert.match(grace.page.url(), /\?decided=1$/);
  assert.equal(await grace.page.textContent('#quorum'), '2 of 2 approvals');
  assert.equal(await runStatus(run.path), 'completed');
  await ada.ctx.close();
  await grace.ctx.close();
});

test('the token page decides without sign-in; used, expired and invalid links get a page for a person', async () => {
  const run = await startRun('e2e-single', 'By link');
  const token = await mintToken(run.path);
  const expired = expiredCopy(token);
  const { ctx, page } = await personPage(null);
  const first = await page.goto(`${server.url}/t/${token}`);
  assert.equal(first.status(), 200);
  assert.equal(await page.textContent('#interrupt-title'), 'Approve e2e-single');
  assert.match(await page.textContent('main'), /By link/);
  assert.equal(await page.$('#signed-in-as'), null);
  await page.fill('#answer-comment', 'Via mail');
  const res = await submit(page, '#action-accept');
  assert.equal(res.status(), 200);
  assert.equal(await page.getAttribute('#link-problem', 'data-status'), '200');
  assert.match(await page.textContent('#link-problem h1'), /Thank you/);
  assert.equal(await runStatus(run.path), 'completed');
  const votes = (await api(server.url, 'GET', run.path)).body.votes;
  assert.equal(votes[0].principal ?? votes[0].principalId, 'grace', JSON.stringify(votes));

  // The link again: used. A problem page answers with its HTTP status too.
  const used = await page.goto(`${server.url}/t/${token}`);
  assert.equal(used.status(), 409);
  assert.equal(await page.getAttribute('#link-problem', 'data-status'), '409');
  assert.match(await page.textContent('#link-problem h1'), /already decided/);
  assert.equal(await page.$('#decide-form'), null);

  // Expired (a validly signed link past its expiry), on a request still open.
  const open = await startRun('e2e-single', 'Expired link');
  const late = expiredCopy(await mintToken(open.path));
  const gone = await page.goto(`${server.url}/t/${late}`);
  assert.equal(gone.status(), 410);
  assert.equal(await page.getAttribute('#link-problem', 'data-status'), '410');
  assert.match(await page.textContent('#link-problem h1'), /expired/);
  assert.equal(await page.$('#decide-form'), null);
  // Posting through an expired link decides nothing.
  const post = await fetch(`${server.url}/t/${late}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: 'action=accept',
  });
  assert.equal(post.status, 410);
  assert.match(await post.text(), /expired/);
  assert.equal((await api(server.url, 'GET', open.path)).body.status, 'pending');
  // The expired copy of the first token is refused the same way.
  await page.goto(`${server.url}/t/${expired}`);
  assert.equal(await page.getAttribute('#link-problem', 'data-status'), '410');

  // Tampered.
  const tampered = `${token.slice(0, -3)}abc`;
  const bad = await page.goto(`${server.url}/t/${tampered}`);
  assert.equal(bad.status(), 401);
  assert.equal(await page.getAttribute('#link-problem', 'data-status'), '401');
  assert.match(await page.textContent('#link-problem h1'), /not valid/);
  await ctx.close();
});

test('token pages answer with their HTTP status over plain HTTP: 200, 401, 404, 409, 410, and 403 for an inspect-only link', async () => {
  const html = (path, init = {}) => fetch(server.url + path, { ...init, headers: { accept: 'text/html', ...init.headers } });
  const run = await startRun('e2e-single', 'Statuses');
  const token = await mintToken(run.path);

  const open = await html(`/t/${token}`);
  assert.equal(open.status, 200);
  assert.match(await open.text(), /id="decide-form"/);

  const tampered = await html(`/t/${token.slice(0, -3)}abc`);
  assert.equal(tampered.status, 401);
  assert.match(tampered.headers.get('content-type'), /text\/html/);
  const page = await tampered.text();
  assert.match(page, /This link is not valid/);
  assert.match(page, /data-status="401"/);

  const expired = await html(`/t/${expiredCopy(token)}`);
  assert.equal(expired.status, 410);
  assert.match(await expired.text(), /This link has expired/);

  // Correctly signed, but for no interrupt that exists.
  const [, , , payload] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const unknown = await html(`/t/${sign({ ...claims, i: 'no-such-interrupt' })}`);
  assert.equal(unknown.status, 404);
  assert.match(await unknown.text(), /Nothing found/);

  // An inspect-only link shows the request (200) and refuses a decision (403).
  const inspect = sign({ ...claims, t: 'inspect', j: randomBytes(16).toString('hex') });
  const shown = await html(`/t/${inspect}`);
  assert.equal(shown.status, 200);
  const shownText = await shown.text();
  assert.match(shownText, /This link may only show the request/);
  assert.doesNotMatch(shownText, /id="decide-form"/);
  const refused = await fetch(`${server.url}/t/${inspect}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: 'action=accept',
  });
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /may only inspect/);
  assert.equal((await api(server.url, 'GET', run.path)).body.status, 'pending');

  // Decided through the link: the thank-you page is 200; the link again is 409.
  const decided = await fetch(`${server.url}/t/${token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: 'action=accept',
  });
  assert.equal(decided.status, 200);
  assert.match(await decided.text(), /Thank you, your decision was recorded/);
  const again = await html(`/t/${token}`);
  assert.equal(again.status, 409);
  assert.match(await again.text(), /This request is already decided/);
});

test('without JavaScript: sign in, a validation error, and a decision are plain form posts', async () => {
  const run = await startRun('e2e-finance', 'No script');
  const { ctx, page } = await personPage(null, { javaScriptEnabled: false });
  await signIn(page, server.url, 'grace');
  assert.equal(await page.textContent('#signed-in-as'), 'Grace Hopper');
  const row = (await rowsOf(page)).find((r) => r.run === run.runId);
  assert.ok(row, 'the inbox lists the run without JavaScript');
  await Promise.all([page.waitForNavigation(), page.click(`#inbox a[href="${row.href}"]`)]);
  assert.equal(await page.textContent('#interrupt-title'), 'Approve e2e-finance');
  await page.fill('#answer-comment', 'no');
  const bad = await submit(page, '#action-reject');
  assert.equal(bad.status(), 400);
  assert.equal(await page.inputValue('#answer-comment'), 'no');
  assert.ok(await page.$('#answer-comment-error'));
  await page.fill('#answer-comment', 'Good');
  await submit(page, '#action-accept');
  assert.match(page.url(), /\?decided=1$/);
  assert.equal(await page.textContent('#quorum'), '1 of 2 approvals');
  assert.match(await page.textContent('#votes'), /grace — accept/);

  // The token page without JavaScript too.
  const other = await startRun('e2e-single', 'No script link');
  const token = await mintToken(other.path);
  await page.goto(`${server.url}/t/${token}`);
  await submit(page, '#action-reject');
  assert.match(await page.textContent('#link-problem h1'), /Thank you/);
  assert.equal(await runStatus(other.path), 'failed');
  await ctx.close();
});

test('axe finds no serious or critical violations on the inbox, the interrupt page and the token page', async () => {
  const run = await startRun('e2e-finance', 'Accessible');
  const { ctx, page } = await personPage('ada');
  assert.deepEqual(await axe(page), [], 'inbox');
  await page.goto(server.url + run.path);
  assert.deepEqual(await axe(page), [], 'interrupt page');
  // With an error beside a field.
  await page.fill('#answer-comment', 'x');
  await submit(page, '#action-accept');
  assert.ok(await page.$('#answer-comment-error'));
  assert.deepEqual(await axe(page), [], 'interrupt page with an error');
  await page.goto(server.url + '/signin');
  assert.deepEqual(await axe(page), [], 'sign-in page');
  const other = await startRun('e2e-single', 'Accessible link');
  await page.goto(`${server.url}/t/${await mintToken(other.path)}`);
  assert.deepEqual(await axe(page), [], 'token page');
  await page.goto(`${server.url}/t/ow2.hs256.e2e-1.bad.bad`);
  assert.deepEqual(await axe(page), [], 'token problem page');
  await ctx.close();
});
